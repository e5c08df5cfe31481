package nfsfront

// Directory streams: a directory listed page by page from the tree's own
// stream, resumable from any cookie, never held whole.

import (
	"os"
	"path"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// A directory is listed over NFS as the kernel lists it over FUSE: one
// OPENDIR, READDIRPLUS pages from the FUSE offset where the last one
// stopped, RELEASEDIR once the listing ends or idles. The NFS cookie of
// an entry is its FUSE offset plus 2 ("." and ".." take 1 and 2), so a
// page may start at any cookie: a stream kept open at that cookie goes
// on, else a new one seeks there (every directory of the tree can seek).
// What a listing holds is one FUSE page per open stream, never the whole
// directory: a snapshot of 1,000,000 files or a table of 1,000,000
// versions is listed in the memory of a small one.

// readDirBuf is the size of one READDIRPLUS reply asked of the file system.
const readDirBuf = 64 << 10

// Sizes of READDIRPLUS records: an EntryOut, then a dirent (ino, off,
// namelen, type), then the name padded to 8 bytes.
const (
	entryOutSize = int(unsafe.Sizeof(fuse.EntryOut{}))
	direntSize   = 24
)

// dirIdle is how long a listing stream is kept open without a page.
const dirIdle = 30 * time.Second

// maxDirStreams bounds the listing streams kept open between pages;
// past it the least recently used is closed (its client's next page
// opens one again, seeking).
const maxDirStreams = 64

// dirEntry is one entry of a listing.
type dirEntry struct {
	name   string
	attr   fuse.Attr
	ok     bool   // attr is known
	cookie uint64 // the NFS cookie of the entry after this one
}

// dirStream is an open directory of the tree, positioned after the
// entries read so far.
type dirStream struct {
	t       *tree
	p       string
	e       *entry // the directory, pinned while open
	fh      uint64
	off     uint64     // FUSE offset of the last entry read
	pending []dirEntry // read from the file system, not yet sent
	eof     bool
	used    time.Time
}

// streamKey finds a stream by directory and the cookie its next entry
// follows.
type streamKey struct {
	p      string
	cookie uint64
}

// dirStreams are the listing streams between pages.
type dirStreams struct {
	t    *tree
	mu   sync.Mutex
	m    map[streamKey]*dirStream // guarded by mu: streams not in use
	stop chan struct{}
	done chan struct{}
}

func newDirStreams(t *tree) *dirStreams {
	d := &dirStreams{t: t, m: map[streamKey]*dirStream{}, stop: make(chan struct{}), done: make(chan struct{})}
	go d.reap()
	return d
}

// take returns a stream of directory p whose next entry follows cookie:
// the one kept there, or a new one seeking there.
func (d *dirStreams) take(p string, cookie uint64) (*dirStream, error) {
	k := streamKey{p, cookie}
	d.mu.Lock()
	s := d.m[k]
	delete(d.m, k)
	d.mu.Unlock()
	if s != nil {
		return s, nil
	}
	s, err := d.t.openDir(p)
	if err != nil {
		return nil, err
	}
	if cookie > 2 {
		s.off = cookie - 2
	}
	return s, nil
}

// put keeps s for the page at cookie, or closes it when it is done.
func (d *dirStreams) put(s *dirStream, cookie uint64) {
	if s.eof && len(s.pending) == 0 {
		s.close()
		return
	}
	s.used = time.Now()
	k := streamKey{s.p, cookie}
	d.mu.Lock()
	old := d.m[k]
	d.m[k] = s
	var victim *dirStream
	if len(d.m) > maxDirStreams {
		var vk streamKey
		for ok, o := range d.m {
			if victim == nil || o.used.Before(victim.used) {
				victim, vk = o, ok
			}
		}
		delete(d.m, vk)
	}
	d.mu.Unlock()
	if old != nil {
		old.close()
	}
	if victim != nil {
		victim.close()
	}
}

// reap closes the streams idle for dirIdle, until closeAll.
func (d *dirStreams) reap() {
	every(dirIdle/4, d.stop, d.done, func(now time.Time) {
		d.release(func(s *dirStream) bool { return now.Sub(s.used) >= dirIdle })
	})
}

// release closes the kept streams that idle says may go.
func (d *dirStreams) release(idle func(*dirStream) bool) {
	var closing []*dirStream
	d.mu.Lock()
	for k, s := range d.m {
		if idle(s) {
			delete(d.m, k)
			closing = append(closing, s)
		}
	}
	d.mu.Unlock()
	for _, s := range closing {
		s.close()
	}
}

// closeAll stops the reaper and closes every kept stream.
func (d *dirStreams) closeAll() {
	close(d.stop)
	<-d.done
	d.release(func(*dirStream) bool { return true })
}

// openDir sends OPENDIR for p.
func (t *tree) openDir(p string) (*dirStream, error) {
	e, err := t.lookup(p)
	if err != nil {
		return nil, err
	}
	var oo fuse.OpenOut
	if st := t.raw.OpenDir(t.cancel, &fuse.OpenIn{InHeader: t.header(e.id), Flags: uint32(os.O_RDONLY)}, &oo); st != fuse.OK {
		t.release(e)
		return nil, errno("opendir", p, st)
	}
	return &dirStream{t: t, p: p, e: e, fh: oo.Fh}, nil
}

// close sends RELEASEDIR and returns the directory's pin.
func (s *dirStream) close() {
	s.t.raw.ReleaseDir(&fuse.ReleaseIn{InHeader: s.t.header(s.e.id), Fh: s.fh})
	s.t.release(s.e)
}

// dirBufs are the buffers of READDIRPLUS replies.
var dirBufs = sync.Pool{New: func() any { b := make([]byte, readDirBuf); return &b }}

// peek returns the next entry without taking it; ok is false at the end.
func (s *dirStream) peek() (dirEntry, bool, error) {
	for len(s.pending) == 0 && !s.eof {
		buf := dirBufs.Get().(*[]byte)
		err := s.fill(*buf)
		dirBufs.Put(buf)
		if err != nil {
			return dirEntry{}, false, err
		}
	}
	if len(s.pending) == 0 {
		return dirEntry{}, false, nil
	}
	return s.pending[0], true, nil
}

// next drops the entry peek returned.
func (s *dirStream) next() {
	s.pending[0] = dirEntry{}
	s.pending = s.pending[1:]
}

// fill reads one READDIRPLUS page into pending (or finds the end).
func (s *dirStream) fill(buf []byte) error {
	list := fuse.NewDirEntryList(buf, s.off)
	in := fuse.ReadIn{InHeader: s.t.header(s.e.id), Fh: s.fh, Offset: s.off, Size: uint32(len(buf))}
	if st := s.t.raw.ReadDirPlus(s.t.cancel, &in, list); st != fuse.OK {
		return errno("readdir", s.p, st)
	}
	data := list.Bytes()
	if len(data) == 0 {
		s.eof = true
		return nil
	}
	var err error
	s.pending, s.off, err = s.t.parseDirPlus(s.p, data, s.pending[:0])
	return err
}

// parseDirPlus appends the entries of one READDIRPLUS reply for directory
// p to out and returns the offset of the last. The nodes READDIRPLUS
// looked up are remembered as if looked up by name; an entry it did not
// look up is looked up by name.
func (t *tree) parseDirPlus(p string, data []byte, out []dirEntry) ([]dirEntry, uint64, error) {
	now := time.Now()
	var off uint64
	for i := 0; i+entryOutSize+direntSize <= len(data); {
		eo := *(*fuse.EntryOut)(unsafe.Pointer(&data[i]))
		d := data[i+entryOutSize:]
		off = *(*uint64)(unsafe.Pointer(&d[8]))
		n := int(*(*uint32)(unsafe.Pointer(&d[16])))
		if direntSize+n > len(d) {
			return nil, 0, errno("readdir", p, fuse.EIO)
		}
		name := string(d[direntSize : direntSize+n])
		i += entryOutSize + direntSize + (n+7)&^7
		if name == "." || name == ".." {
			if eo.NodeId != 0 {
				t.raw.Forget(eo.NodeId, 1)
			}
			continue
		}
		de := dirEntry{name: name, cookie: off + 2}
		child := path.Join(p, name)
		if eo.NodeId == 0 {
			attr, err := t.attr(child)
			if err != nil {
				continue // gone since it was listed
			}
			de.attr, de.ok = attr, true
		} else {
			t.release(t.remember(child, &eo, now))
			de.attr, de.ok = eo.Attr, true
		}
		out = append(out, de)
	}
	return out, off, nil
}

// fileInfo is a node's attributes as os.FileInfo (Sys gives them whole).
type fileInfo struct {
	name string
	attr fuse.Attr
}

func (fi *fileInfo) Name() string      { return fi.name }
func (fi *fileInfo) Size() int64       { return int64(fi.attr.Size) }
func (fi *fileInfo) Mode() os.FileMode { return fileMode(fi.attr.Mode) }
func (fi *fileInfo) ModTime() time.Time {
	return time.Unix(int64(fi.attr.Mtime), int64(fi.attr.Mtimensec))
}
func (fi *fileInfo) IsDir() bool { return fi.attr.Mode&syscall.S_IFMT == syscall.S_IFDIR }
func (fi *fileInfo) Sys() any    { return fi.attr }

// fileMode converts a POSIX mode to an os.FileMode.
func fileMode(m uint32) os.FileMode {
	mode := os.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		mode |= os.ModeDir
	case syscall.S_IFLNK:
		mode |= os.ModeSymlink
	case syscall.S_IFIFO:
		mode |= os.ModeNamedPipe
	case syscall.S_IFSOCK:
		mode |= os.ModeSocket
	case syscall.S_IFCHR:
		mode |= os.ModeDevice | os.ModeCharDevice
	case syscall.S_IFBLK:
		mode |= os.ModeDevice
	}
	return mode
}
