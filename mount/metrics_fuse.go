package mount

import (
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/nodes"
)

// timedFS wraps the node filesystem's raw FUSE interface to time every
// request that reaches userspace and count failures by errno. Requests
// the kernel answers from its caches (or reads served by passthrough)
// never arrive here. Methods not overridden pass through untimed.
type timedFS struct {
	fuse.RawFileSystem
	m *metrics
}

// done records one request of op that started at start.
func (t *timedFS) done(op string, start time.Time, st fuse.Status) {
	t.m.fuseDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if st != fuse.OK {
		t.m.fuseErrors.WithLabelValues(op, nodes.ErrnoName(syscall.Errno(st))).Inc()
	}
}

func (t *timedFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	start := time.Now()
	st := t.RawFileSystem.Lookup(cancel, h, name, out)
	t.done("lookup", start, st)
	return st
}

func (t *timedFS) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	start := time.Now()
	st := t.RawFileSystem.GetAttr(cancel, in, out)
	t.done("getattr", start, st)
	return st
}

func (t *timedFS) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	start := time.Now()
	b, st := t.RawFileSystem.Readlink(cancel, h)
	t.done("readlink", start, st)
	return b, st
}

func (t *timedFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	start := time.Now()
	st := t.RawFileSystem.Open(cancel, in, out)
	t.done("open", start, st)
	if st == fuse.OK {
		path := "userspace"
		if out.OpenFlags&fuse.FOPEN_PASSTHROUGH != 0 {
			path = "passthrough"
		}
		t.m.opens.WithLabelValues(path).Inc()
	}
	return st
}

func (t *timedFS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	start := time.Now()
	r, st := t.RawFileSystem.Read(cancel, in, buf)
	t.done("read", start, st)
	if st == fuse.OK && r != nil {
		t.m.bytesServed.Add(float64(r.Size()))
	}
	return r, st
}

func (t *timedFS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	start := time.Now()
	st := t.RawFileSystem.OpenDir(cancel, in, out)
	t.done("opendir", start, st)
	return st
}

func (t *timedFS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	start := time.Now()
	st := t.RawFileSystem.ReadDirPlus(cancel, in, out)
	t.done("readdirplus", start, st)
	return st
}

func (t *timedFS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	start := time.Now()
	st := t.RawFileSystem.ReadDir(cancel, in, out)
	t.done("readdir", start, st)
	return st
}

func (t *timedFS) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	start := time.Now()
	st := t.RawFileSystem.Create(cancel, in, name, out)
	t.done("create", start, st)
	return st
}

func (t *timedFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	start := time.Now()
	n, st := t.RawFileSystem.Write(cancel, in, data)
	t.done("write", start, st)
	return n, st
}

func (t *timedFS) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	start := time.Now()
	st := t.RawFileSystem.Flush(cancel, in)
	t.done("flush", start, st)
	return st
}

func (t *timedFS) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	start := time.Now()
	st := t.RawFileSystem.Mkdir(cancel, in, name, out)
	t.done("mkdir", start, st)
	return st
}

// mountTimed mounts raw (from gofs.NewNodeFS) like gofs.Mount, with every request timed.
func mountTimed(dir string, raw fuse.RawFileSystem, opts *fuse.MountOptions, m *metrics) (*fuse.Server, error) {
	srv, err := fuse.NewServer(&timedFS{RawFileSystem: raw, m: m}, dir, opts)
	if err != nil {
		return nil, err
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		// The kernel may hold the mount although the first request
		// failed (a regular file as mountpoint): undo it, or a dead mount
		// (ENOTCONN) stays until unmounted by hand.
		srv.Unmount()
		return nil, err
	}
	return srv, nil
}
