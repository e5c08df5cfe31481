package nfsfront

// Open files for READ: one FUSE open per path, shared by the READs that
// come for it and released once unused for openIdle (NFS has no open or
// close) or when the server closes.

import (
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// NFSv3 has no open or close: each READ names the file by its handle. An
// open of the tree (OPEN, READs, FLUSH, RELEASE, as the kernel sends them)
// is kept per path while READs come, and released once idle for
// openIdle: a reader's stream of READs costs one OPEN, not one a request.

// openIdle is how long an open file is kept without a READ.
const openIdle = 10 * time.Second

// maxOpen bounds the files kept open (each may hold a descriptor of the
// stored file): a client reading through 100,000 files in openIdle would
// otherwise hold as many. Past it, the least recently read unused one is
// closed.
const maxOpen = 256

// openFile is one OPEN of a node, shared by the READs of its path.
type openFile struct {
	t     *tree
	path  string
	e     *entry // pinned while open
	fh    uint64
	flush bool // the file system wants FLUSH before RELEASE

	refs     int       // guarded by opens.mu: READs in progress
	lastUsed time.Time // guarded by opens.mu
	stale    bool      // guarded by opens.mu: out of the map, closed by the last put
}

// opens is the set of open files, by path.
type opens struct {
	t    *tree
	mu   sync.Mutex
	m    map[string]*openFile // guarded by mu
	stop chan struct{}
	done chan struct{}

	// closing tracks the closes get starts in the background (a file
	// opened twice at once, the one maxOpen evicts), so that closeAll
	// returns only once their lookups are returned too.
	closing sync.WaitGroup
}

func newOpens(t *tree) *opens {
	o := &opens{t: t, m: map[string]*openFile{}, stop: make(chan struct{}), done: make(chan struct{})}
	go o.reap()
	return o
}

// get returns the open file of p, opening it when needed; the caller
// must put it back. An open is shared only while the attributes the tree
// gave its node are valid: a snapshot's file for long, a status file's
// never (its content changes: each READ of it opens it again, as each
// open(2) of it on a FUSE mount does).
func (o *opens) get(p string) (*openFile, error) {
	o.mu.Lock()
	if f := o.m[p]; f != nil {
		if time.Now().Before(f.e.attrEnd) {
			f.refs++
			o.mu.Unlock()
			return f, nil
		}
		delete(o.m, p)
		if f.refs == 0 {
			defer f.close()
		} else {
			f.stale = true // closed by its last put
		}
	}
	o.mu.Unlock()
	f, err := o.t.open(p)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if other := o.m[p]; other != nil && !other.stale { // opened meanwhile: keep one
		o.closing.Go(f.close)
		other.refs++
		return other, nil
	}
	f.refs = 1
	o.m[p] = f
	if len(o.m) > maxOpen {
		if victim := o.oldestUnusedLocked(); victim != nil {
			delete(o.m, victim.path)
			o.closing.Go(victim.close)
		}
	}
	return f, nil
}

// oldestUnusedLocked returns the least recently read open file no READ
// uses, or nil.
func (o *opens) oldestUnusedLocked() *openFile {
	var oldest *openFile
	for _, f := range o.m {
		if f.refs == 0 && (oldest == nil || f.lastUsed.Before(oldest.lastUsed)) {
			oldest = f
		}
	}
	return oldest
}

func (o *opens) put(f *openFile) {
	o.mu.Lock()
	f.refs--
	f.lastUsed = time.Now()
	last := f.stale && f.refs == 0
	o.mu.Unlock()
	if last {
		f.close()
	}
}

// reap releases the files idle for openIdle, until closeAll.
func (o *opens) reap() {
	every(openIdle/4, o.stop, o.done, func(now time.Time) {
		o.release(func(f *openFile) bool { return now.Sub(f.lastUsed) >= openIdle })
	})
}

// every calls fn each period until stop is closed, then closes done.
func every(period time.Duration, stop <-chan struct{}, done chan<- struct{}, fn func(now time.Time)) {
	defer close(done)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			fn(now)
		}
	}
}

// release closes the unused open files that idle says may go.
func (o *opens) release(idle func(*openFile) bool) {
	var closing []*openFile
	o.mu.Lock()
	for p, f := range o.m {
		if f.refs == 0 && idle(f) {
			delete(o.m, p)
			closing = append(closing, f)
		}
	}
	o.mu.Unlock()
	for _, f := range closing {
		f.close()
	}
}

// closeAll stops the reaper and closes every unused file, waiting for
// the closes started in the background.
func (o *opens) closeAll() {
	close(o.stop)
	<-o.done
	o.release(func(*openFile) bool { return true })
	o.closing.Wait()
}

// open sends OPEN for p, read-only.
func (t *tree) open(p string) (*openFile, error) {
	e, err := t.lookup(p)
	if err != nil {
		return nil, err
	}
	switch e.attr.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		t.release(e)
		return nil, errno("open", p, fuse.Status(syscall.EISDIR))
	case syscall.S_IFLNK: // clients follow links themselves (READLINK)
		t.release(e)
		return nil, errno("open", p, fuse.Status(syscall.ELOOP))
	}
	var oo fuse.OpenOut
	in := fuse.OpenIn{InHeader: t.header(e.id), Flags: uint32(os.O_RDONLY)}
	if st := t.raw.Open(t.cancel, &in, &oo); st != fuse.OK {
		t.release(e)
		return nil, errno("open", p, st)
	}
	return &openFile{t: t, path: p, e: e, fh: oo.Fh, flush: oo.OpenFlags&fuse.FOPEN_NOFLUSH == 0, lastUsed: time.Now()}, nil
}

// readAt fills b from offset off (READ requests until b is full or the
// file ends) and returns io.EOF with a short count at the end.
func (f *openFile) readAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		in := fuse.ReadIn{InHeader: f.t.header(f.e.id), Fh: f.fh, Offset: uint64(off) + uint64(n), Size: uint32(min(len(b)-n, 1<<30))}
		res, st := f.t.raw.Read(f.t.cancel, &in, b[n:])
		if st != fuse.OK {
			return n, errno("read", f.path, st)
		}
		data, st := res.Bytes(b[n:])
		if st != fuse.OK {
			res.Done()
			return n, errno("read", f.path, st)
		}
		if len(data) > 0 && &data[0] != &b[n] {
			copy(b[n:], data)
		}
		res.Done()
		if len(data) == 0 {
			return n, io.EOF
		}
		n += len(data)
	}
	return n, nil
}

// close sends FLUSH (unless the file system declined it) and RELEASE, and
// returns the node's pin.
func (f *openFile) close() {
	h := f.t.header(f.e.id)
	if f.flush {
		f.t.raw.Flush(f.t.cancel, &fuse.FlushIn{InHeader: h, Fh: f.fh})
	}
	f.t.raw.Release(f.t.cancel, &fuse.ReleaseIn{InHeader: h, Fh: f.fh})
	f.t.release(f.e)
}
