//go:build !linux

package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// openLocal opens key under the local table root dir as a data file to
// serve, with the rules of the Linux version (localfile_linux.go)
// but without openat2: each directory below dir is opened in turn with
// O_NOFOLLOW (a symbolic link anywhere on the path is refused), ".."
// is refused, and the file itself is opened O_NONBLOCK|O_NOFOLLOW and
// must be a regular file.
func openLocal(dir, key string) (*fileContent, error) {
	root, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("data file %s: table root: %w", key, err)
	}
	defer root.Close()
	parts := strings.Split(key, "/")
	fd, err := unix.Dup(int(root.Fd()))
	if err != nil {
		return nil, fmt.Errorf("data file %s: %w", key, err)
	}
	for i, part := range parts {
		if part == ".." {
			unix.Close(fd)
			return nil, localOpenError(key, unix.EXDEV)
		}
		if part == "" || part == "." {
			continue
		}
		flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		} else {
			flags |= unix.O_NONBLOCK | unix.O_NOCTTY
		}
		next, err := unix.Openat(fd, part, flags, 0)
		unix.Close(fd)
		if err != nil {
			if err == unix.ENOTDIR && i < len(parts)-1 {
				err = unix.ELOOP // a symbolic link (or a file) where a directory was
			}
			return nil, localOpenError(key, err)
		}
		fd = next
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("data file %s: %w", key, err)
	}
	if err := checkRegular(key, uint32(st.Mode)); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &fileContent{f: os.NewFile(uintptr(fd), filepath.Join(dir, filepath.FromSlash(key))), size: st.Size}, nil
}
