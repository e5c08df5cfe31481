package nodes

import (
	"context"
	"errors"
	"syscall"

	"github.com/deltafs/deltafs/delta"
)

// This file is the one place where Go errors become errno values. The
// rules:
//
//   - a cancelled request (the caller was interrupted) is EINTR;
//   - a version, timestamp or name that does not exist is ENOENT;
//   - a table needing a protocol feature this engine lacks is EOPNOTSUPP;
//   - anything else in the log (corrupt, unreachable) is EIO;
//   - a data file that cannot be served (missing from storage, vacuumed,
//     corrupt deletion vector, unreadable Parquet) is EIO, never ENOENT:
//     the file is listed, so its absence is an error of the table;
//   - every mutation of the tree is EROFS.
//
// Everything but ENOENT and EINTR is logged with the table, version and
// file, so that a user seeing EIO can find why.

// errReadOnly is the answer to every write, create, unlink, rename,
// mkdir, setattr: snapshots are immutable.
const errReadOnly = syscall.EROFS

// metaErrno maps an error from reading the log (listing versions,
// building a snapshot, resolving a timestamp) and logs it.
func (e *Env) metaErrno(op string, err error, attrs ...any) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case cancelled(err):
		return syscall.EINTR
	case errors.Is(err, delta.ErrVersionNotFound), errors.Is(err, delta.ErrInvalidSpec):
		return syscall.ENOENT
	case errors.Is(err, delta.ErrUnsupportedFeature):
		e.logFailure(op, err, attrs)
		return syscall.EOPNOTSUPP
	default:
		e.logFailure(op, err, attrs)
		return syscall.EIO
	}
}

// dataErrno maps an error from serving a data file's bytes and logs it.
func (e *Env) dataErrno(op string, err error, attrs ...any) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case cancelled(err):
		return syscall.EINTR
	default:
		e.logFailure(op, err, attrs)
		return syscall.EIO
	}
}

// refusedErrno is the answer for the snapshot entries of a table that
// cannot be read at all (its reason is in its _deltafs_error.txt).
func refusedErrno(err error) syscall.Errno {
	if errors.Is(err, delta.ErrUnsupportedFeature) {
		return syscall.EOPNOTSUPP
	}
	return syscall.EIO
}

func cancelled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (e *Env) logFailure(op string, err error, attrs []any) {
	e.log.Error("deltafs: "+op+" failed", append(attrs, "err", err.Error())...)
}
