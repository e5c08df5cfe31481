package nodes

import (
	"sync"
	"syscall"
	"time"
)

// dataErrorsShown bounds the recent data errors the status file lists per
// table.
const dataErrorsShown = 20

// DataError is a data file of a listed snapshot that could not be served:
// its open or read failed with an errno (EIO), for the reason given.
type DataError struct {
	Time    time.Time `json:"time"`
	Op      string    `json:"op"` // open, read, ...
	Version int64     `json:"version"`
	File    string    `json:"file"` // path inside @vN
	Errno   string    `json:"errno"`
	Error   string    `json:"error"`
}

// dataErrors is one table's record of data files that failed to serve,
// for the status file: a count and the most recent few. It costs a fixed
// number of entries whatever the failures.
type dataErrors struct {
	mu     sync.Mutex
	count  int         // guarded by mu: failures since the mount
	recent []DataError // guarded by mu: the newest dataErrorsShown, oldest first
}

// add records a failure.
func (r *dataErrors) add(e DataError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	if len(r.recent) == dataErrorsShown {
		r.recent = append(r.recent[:0], r.recent[1:]...)
	}
	r.recent = append(r.recent, e)
}

// snapshot returns the count and a copy of the recent failures.
func (r *dataErrors) snapshot() (int, []DataError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count, append([]DataError(nil), r.recent...)
}

// fail chooses the errno of a failure to serve the file (errno.go), logs
// it and, unless the caller was only interrupted, records it in the
// table's status.
func (d *DataFile) fail(op string, err error) syscall.Errno {
	errno := d.env().DataErrno(op, err, d.logAttrs()...)
	if errno != 0 && errno != syscall.EINTR && d.ref.errs != nil {
		d.ref.errs.add(DataError{Time: time.Now().UTC(), Op: op, Version: d.ref.version,
			File: d.path, Errno: ErrnoName(errno), Error: err.Error()})
	}
	return errno
}
