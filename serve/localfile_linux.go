package serve

// openat2 beneath the table's root (no symbolic link, no escape), and the
// errors it gives named.

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openLocalFD opens key under the local table root (a directory
// descriptor) as a data file to serve, refusing what would leave the
// table or hang the reader, and returns the descriptor and the file's
// size:
//
//   - every path component below the root is resolved without following
//     a symbolic link and without leaving it (openat2 with
//     RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS): a log that adds a symlink
//     to a file the reader may not read serves nothing;
//   - only a regular file is ever opened for reading: the path is first
//     checked with fstatat (which opens nothing: no FIFO, socket or
//     device), then opened with O_NONBLOCK|O_NOCTTY (a FIFO put there in
//     between cannot block) and checked to be the same inode. A path
//     fstatat does not find regular is looked at again with an O_PATH
//     open, which says why without following a symbolic link.
//
// A missing file wraps delta.ErrNotExist; the others name why.
func openLocalFD(root int, key string) (int, int64, error) {
	rel := filepath.FromSlash(key)
	resolve := uint64(unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS)
	var first unix.Stat_t
	if err := unix.Fstatat(root, rel, &first, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT); err != nil || first.Mode&unix.S_IFMT != unix.S_IFREG {
		// The reason, resolved as the open would resolve it.
		pfd, err := unix.Openat2(root, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: resolve})
		if err != nil {
			return -1, 0, localOpenError(key, err)
		}
		err = unix.Fstat(pfd, &first)
		unix.Close(pfd)
		if err != nil {
			return -1, 0, fmt.Errorf("data file %s: %w", key, err)
		}
		if err := checkRegular(key, uint32(first.Mode)); err != nil {
			return -1, 0, err
		}
	}
	fd, err := unix.Openat2(root, rel, &unix.OpenHow{
		Flags: unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: resolve})
	if err != nil {
		return -1, 0, localOpenError(key, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("data file %s: %w", key, err)
	}
	if err := checkRegular(key, uint32(st.Mode)); err != nil || st.Dev != first.Dev || st.Ino != first.Ino {
		unix.Close(fd)
		if err == nil {
			err = fmt.Errorf("data file %s: replaced while being opened", key)
		}
		return -1, 0, err
	}
	return fd, st.Size, nil
}
