//go:build !linux

package serve

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// openLocalFD opens key under the local table root (a directory
// descriptor) as a data file to serve, with the rules of the Linux
// version (localfile_linux.go) but without openat2: each directory below
// the root is opened in turn with
// O_NOFOLLOW (a symbolic link anywhere on the path is refused), ".."
// is refused, and the file itself is opened O_NONBLOCK|O_NOFOLLOW and
// must be a regular file.
func openLocalFD(root int, key string) (int, int64, error) {
	parts := strings.Split(key, "/")
	fd, err := unix.Dup(root)
	if err != nil {
		return -1, 0, fmt.Errorf("data file %s: %w", key, err)
	}
	for i, part := range parts {
		if part == ".." {
			unix.Close(fd)
			return -1, 0, localOpenError(key, unix.EXDEV)
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
			return -1, 0, localOpenError(key, err)
		}
		fd = next
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("data file %s: %w", key, err)
	}
	if err := checkRegular(key, uint32(st.Mode)); err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	return fd, st.Size, nil
}
