package serve

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openLocal opens key under the local table root dir as a data file to
// serve, refusing what would leave the table or hang the reader:
//
//   - every path component below dir is resolved without following a
//     symbolic link and without leaving dir (openat2 with RESOLVE_BENEATH
//     and RESOLVE_NO_SYMLINKS): a log that adds a symlink to a file the
//     reader may not read serves nothing;
//   - only a regular file is ever opened for reading: the path is first
//     opened with O_PATH (which opens no FIFO, socket or device) and
//     fstat'ed, then opened again with O_NONBLOCK|O_NOCTTY (a FIFO put
//     there in between cannot block) and checked to be the same inode.
//
// A missing file wraps delta.ErrNotExist; the others name why.
func openLocal(dir, key string) (*fileContent, error) {
	root, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("data file %s: table root: %w", key, err)
	}
	defer root.Close()
	rel := filepath.FromSlash(key)
	resolve := uint64(unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS)
	pfd, err := unix.Openat2(int(root.Fd()), rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: resolve})
	if err != nil {
		return nil, localOpenError(key, err)
	}
	var first unix.Stat_t
	err = unix.Fstat(pfd, &first)
	unix.Close(pfd)
	if err != nil {
		return nil, fmt.Errorf("data file %s: %w", key, err)
	}
	if err := checkRegular(key, uint32(first.Mode)); err != nil {
		return nil, err
	}
	fd, err := unix.Openat2(int(root.Fd()), rel, &unix.OpenHow{
		Flags: unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: resolve})
	if err != nil {
		return nil, localOpenError(key, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("data file %s: %w", key, err)
	}
	if err := checkRegular(key, uint32(st.Mode)); err != nil || st.Dev != first.Dev || st.Ino != first.Ino {
		unix.Close(fd)
		if err == nil {
			err = fmt.Errorf("data file %s: replaced while being opened", key)
		}
		return nil, err
	}
	return &fileContent{f: os.NewFile(uintptr(fd), filepath.Join(dir, rel)), size: st.Size}, nil
}
