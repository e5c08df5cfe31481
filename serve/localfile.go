package serve

// Opening a local table's data file beneath its root, regular files only,
// and why an open failed.

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/delta"
)

// localOpenError names why a data file could not be opened.
func localOpenError(key string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("data file %s: %w", key, delta.ErrNotExist)
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("data file %s: refused: it is a symbolic link or its path goes through one", key)
	case errors.Is(err, unix.EXDEV):
		return fmt.Errorf("data file %s: refused: its path leaves the table", key)
	}
	return fmt.Errorf("data file %s: %w", key, err)
}

// checkRegular refuses a data file that is not a regular file.
func checkRegular(key string, mode uint32) error {
	kind := ""
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFIFO:
		kind = "a FIFO"
	case unix.S_IFSOCK:
		kind = "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		kind = "a device"
	case unix.S_IFDIR:
		kind = "a directory"
	case unix.S_IFLNK:
		kind = "a symbolic link"
	default:
		kind = fmt.Sprintf("of type %#o", mode&unix.S_IFMT)
	}
	return fmt.Errorf("data file %s: refused: it is %s, not a regular file", key, kind)
}
