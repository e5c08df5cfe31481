package nodes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

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
//   - a listed entry always stats (statErrno): a file that cannot be
//     served fails at open or read, never at stat;
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
	case Cancelled(err):
		return syscall.EINTR
	case errors.Is(err, delta.ErrVersionNotFound), errors.Is(err, delta.ErrInvalidSpec):
		return syscall.ENOENT
	case errors.Is(err, delta.ErrUnsupportedFeature):
		e.logFailure(op, err, attrs)
		e.observe(op, syscall.EOPNOTSUPP, false)
		return syscall.EOPNOTSUPP
	default:
		return e.failErrno(op, err, attrs)
	}
}

// failErrno logs a failure and answers EIO, or EMFILE / ENFILE when the
// process or the system ran out of file descriptors (at the fd
// limit opens failed with EIO, which says the data is bad), so that the
// caller sees a limit it can raise.
func (e *Env) failErrno(op string, err error, attrs []any) syscall.Errno {
	errno := syscall.EIO
	switch {
	case errors.Is(err, syscall.EMFILE):
		errno = syscall.EMFILE
	case errors.Is(err, syscall.ENFILE):
		errno = syscall.ENFILE
	}
	e.logFailure(op, err, attrs)
	e.observe(op, errno, false)
	return errno
}

// DataErrno maps an error from serving a data file's bytes and logs it.
func (e *Env) DataErrno(op string, err error, attrs ...any) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case Cancelled(err):
		return syscall.EINTR
	default:
		return e.failErrno(op, err, attrs)
	}
}

// statErrno is the answer of a stat whose exact answer failed with err:
// EINTR when the caller was interrupted, else none (0), because a listed
// entry always stats (a failed stat makes a glob skip the file without an
// error); the failure is then the open's or the read's.
func statErrno(err error) syscall.Errno {
	if Cancelled(err) {
		return syscall.EINTR
	}
	return 0
}

// observe tells the Observer, if any, of a failed operation.
func (e *Env) observe(op string, errno syscall.Errno, refused bool) {
	if e.Opts.Observer != nil {
		e.Opts.Observer.Failed(op, errno, refused)
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

// Cancelled reports whether err is a cancelled request's (the caller
// was interrupted, or its deadline passed).
func Cancelled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (e *Env) logFailure(op string, err error, attrs []any) {
	e.log.Error("deltafs: "+op+" failed", append(attrs, "err", err.Error())...)
}

// InboxErrno maps the outcome of an inbox operation (create, mkdir, the
// commit of a staged file) and logs refusals: a file or name the table
// does not accept is EINVAL, a table deltafs cannot write EROFS, an
// interrupted request EINTR, a staged file cut short by a full disk or
// the staging budget ENOSPC (EDQUOT for a quota), and anything else (storage trouble, a commit
// conflict not resolved in the committer's time) EIO. A conflict is EIO,
// not EAGAIN: programs do not retry close().
func (e *Env) InboxErrno(op string, err error, attrs ...any) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrInvalidFile):
		e.log.Warn("deltafs: inbox "+op+" refused", append(attrs, "err", err.Error())...)
		e.observe("inbox "+op, syscall.EINVAL, true)
		return syscall.EINVAL
	case errors.Is(err, ErrNotWritable):
		e.log.Warn("deltafs: inbox "+op+" refused", append(attrs, "err", err.Error())...)
		e.observe("inbox "+op, syscall.EROFS, true)
		return syscall.EROFS
	case errors.Is(err, ErrCommitUnfinished):
		e.logFailure("inbox "+op, err, attrs)
		e.observe("inbox "+op, syscall.EIO, false)
		return syscall.EIO
	case Cancelled(err):
		return syscall.EINTR
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		errno := syscall.ENOSPC
		if errors.Is(err, syscall.EDQUOT) {
			errno = syscall.EDQUOT
		}
		e.logFailure("inbox "+op, err, attrs)
		e.observe("inbox "+op, errno, false)
		return errno
	default:
		e.logFailure("inbox "+op, err, attrs)
		e.observe("inbox "+op, syscall.EIO, false)
		return syscall.EIO
	}
}

// ErrCommitUnfinished marks a commit whose wait ended (its deadline
// passed, or the store went away) before it finished: close() and
// rename() return EIO, never EINTR, and the reason goes to
// _status.jsonl (the version may or may not exist).
var ErrCommitUnfinished = errors.New("the commit did not finish in time; its outcome may be unknown (see _history.jsonl)")

// CommitError is err of a commit, marked ErrCommitUnfinished when it
// wraps a cancellation: a commit path never answers EINTR.
func CommitError(err error) error {
	if err != nil && Cancelled(err) && !errors.Is(err, ErrCommitUnfinished) {
		return fmt.Errorf("%w: %w", ErrCommitUnfinished, err)
	}
	return err
}

// ErrnoName is the symbolic name of an errno ("EIO"), as _status.jsonl
// and the metrics' labels show it, or "errno_N" for one without a name.
func ErrnoName(errno syscall.Errno) string {
	if name, ok := errnoNames[errno]; ok {
		return name
	}
	if name := unix.ErrnoName(errno); name != "" {
		return name
	}
	return "errno_" + strconv.Itoa(int(errno))
}

// errnoNames are the names of the errnos the mount returns, where the
// platform's table would say otherwise (Linux names 95 ENOTSUP, which
// deltafs returns as EOPNOTSUPP).
var errnoNames = map[syscall.Errno]string{
	syscall.EOPNOTSUPP: "EOPNOTSUPP", syscall.EAGAIN: "EAGAIN",
}
