package nfsfront

// Files written over NFS: the FUSE open that WRITEs share, closed (and so
// committed, for an inbox file) before a rename or once no WRITE came for
// the settle time.

import (
	"cmp"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Writes. NFSv3 has no open or close, and the tree decides what a file
// written into an inbox becomes when it is closed (FLUSH) or renamed. So
// a file created or written over NFS keeps one FUSE open (CREATE, or OPEN
// for writing) for all its WRITEs, and it is closed (FLUSH, RELEASE) the
// way the kernel would close it for a program:
//
//   - before a RENAME of it, or of a directory holding it: a program
//     closes a temporary file before renaming it into place (rsync, the
//     Hadoop committers, DuckDB's COPY), and the rename commits;
//   - once no WRITE or COMMIT came for the settle time: a program wrote it
//     under its final name and closed it (a client COMMITs at close); the
//     close commits it.
//
// The outcome of a close is the tree's to record (inbox/_status.jsonl): an
// NFS client is answered before it. A RENAME's answer is the commit's.
// A REMOVE of a file being written unlinks it, then releases it without
// FLUSH (nothing to commit). At shutdown, files not yet closed are
// released without FLUSH: the tree drops them, as at an unmount.

// writeFile is one FUSE open for writing, shared by the WRITEs of a path.
type writeFile struct {
	t     *tree
	path  string
	e     *entry // pinned while open
	fh    uint64
	flush bool

	seq uint64 // order of opening: files closed together close in it

	mu        sync.Mutex
	lastWrite time.Time // guarded by mu
}

// writes is the set of files open for writing, by path.
type writes struct {
	t      *tree
	settle time.Duration
	mu     sync.Mutex
	m      map[string]*writeFile // guarded by mu
	seq    uint64                // guarded by mu: the last writeFile.seq
	stop   chan struct{}
	done   chan struct{}
}

func newWrites(t *tree, settle time.Duration) *writes {
	w := &writes{t: t, settle: settle, m: map[string]*writeFile{}, stop: make(chan struct{}), done: make(chan struct{})}
	go w.settleLoop()
	return w
}

// settleLoop closes the files quiet for the settle time, until stopAll.
func (w *writes) settleLoop() {
	defer close(w.done)
	tick := time.NewTicker(max(w.settle/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case now := <-tick.C:
			for _, f := range w.take(func(f *writeFile) bool { return now.Sub(f.last()) >= w.settle }) {
				f.close(true)
			}
		}
	}
}

// take removes and returns the open files that match, in the order they
// were opened (a program closes its files in the order it wrote them;
// the inbox's status lines follow).
func (w *writes) take(match func(*writeFile) bool) []*writeFile {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*writeFile
	for p, f := range w.m {
		if match(f) {
			delete(w.m, p)
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b *writeFile) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// under returns a matcher of p and the paths below it.
func under(p string) func(*writeFile) bool {
	return func(f *writeFile) bool { return f.path == p || strings.HasPrefix(f.path, p+"/") }
}

// stopAll stops the settling and releases every open file without FLUSH.
func (w *writes) stopAll() {
	close(w.stop)
	<-w.done
	for _, f := range w.take(func(*writeFile) bool { return true }) {
		f.close(false)
	}
}

// get returns the open file of p, opening it for writing when none is.
func (w *writes) get(p string) (*writeFile, error) {
	w.mu.Lock()
	f := w.m[p]
	w.mu.Unlock()
	if f != nil {
		return f, nil
	}
	e, err := w.t.lookup(p)
	if err != nil {
		return nil, err
	}
	var oo fuse.OpenOut
	in := fuse.OpenIn{InHeader: w.t.header(e.id), Flags: uint32(os.O_WRONLY)}
	if st := w.t.raw.Open(w.t.cancel, &in, &oo); st != fuse.OK {
		w.t.release(e)
		return nil, errno("open", p, st)
	}
	return w.add(&writeFile{t: w.t, path: p, e: e, fh: oo.Fh, flush: oo.OpenFlags&fuse.FOPEN_NOFLUSH == 0, lastWrite: time.Now()}), nil
}

// add makes f the open file of its path; one opened meanwhile is closed.
func (w *writes) add(f *writeFile) *writeFile {
	w.mu.Lock()
	w.seq++
	f.seq = w.seq
	old := w.m[f.path]
	w.m[f.path] = f
	w.mu.Unlock()
	if old != nil {
		old.close(true)
	}
	return f
}

func (f *writeFile) last() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastWrite
}

// writeAt sends WRITE requests for b at off.
func (f *writeFile) writeAt(b []byte, off int64) (int, error) {
	f.mu.Lock()
	f.lastWrite = time.Now()
	f.mu.Unlock()
	n := 0
	for n < len(b) {
		chunk := b[n:min(len(b), n+maxWrite)]
		in := fuse.WriteIn{InHeader: f.t.header(f.e.id), Fh: f.fh, Offset: uint64(off) + uint64(n), Size: uint32(len(chunk))}
		written, st := f.t.raw.Write(f.t.cancel, &in, chunk)
		if st != fuse.OK {
			return n, errno("write", f.path, st)
		}
		if written == 0 {
			return n, errno("write", f.path, fuse.EIO)
		}
		n += int(written)
	}
	return n, nil
}

// commit is a client's COMMIT of p: the file's settle time counts from
// now (a client commits when its program closes the file; the commit of
// an inbox file follows once it stays quiet). It sends no FSYNC: the
// tree commits an inbox file on fsync, and a client may COMMIT before a
// file's last WRITE (to free its cache).
func (w *writes) commit(p string) error {
	w.mu.Lock()
	f := w.m[p]
	w.mu.Unlock()
	if f == nil {
		return nil // closed already (settled, renamed): nothing held
	}
	f.mu.Lock()
	f.lastWrite = time.Now()
	f.mu.Unlock()
	return nil
}

// maxWrite is the largest WRITE sent, the FUSE mount's.
const maxWrite = 1 << 20

// truncate sets the size of the open file.
func (f *writeFile) truncate(size int64) error {
	in := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: f.t.header(f.e.id), Valid: fuse.FATTR_SIZE | fuse.FATTR_FH, Fh: f.fh, Size: uint64(size)}}
	var out fuse.AttrOut
	if st := f.t.raw.SetAttr(f.t.cancel, &in, &out); st != fuse.OK {
		return errno("truncate", f.path, st)
	}
	return nil
}

// close sends FLUSH (when flush and the tree wants it) and RELEASE.
func (f *writeFile) close(flush bool) {
	h := f.t.header(f.e.id)
	if flush && f.flush {
		f.t.raw.Flush(f.t.cancel, &fuse.FlushIn{InHeader: h, Fh: f.fh})
	}
	f.t.raw.Release(f.t.cancel, &fuse.ReleaseIn{InHeader: h, Fh: f.fh})
	f.t.release(f.e)
}

// create sends CREATE for p and keeps the file open for its WRITEs.
func (w *writes) create(p string, mode os.FileMode) (*writeFile, error) {
	dir, name := path.Split(p)
	parent, err := w.t.lookup(clean(dir))
	if err != nil {
		return nil, err
	}
	defer w.t.release(parent)
	in := fuse.CreateIn{InHeader: w.t.header(parent.id), Flags: uint32(os.O_WRONLY | os.O_CREATE | os.O_TRUNC), Mode: syscall.S_IFREG | uint32(mode.Perm())}
	var out fuse.CreateOut
	if st := w.t.raw.Create(w.t.cancel, &in, name, &out); st != fuse.OK {
		return nil, errno("create", p, st)
	}
	e := w.t.remember(p, &out.EntryOut, time.Now())
	return w.add(&writeFile{t: w.t, path: p, e: e, fh: out.Fh, flush: out.OpenFlags&fuse.FOPEN_NOFLUSH == 0, lastWrite: time.Now()}), nil
}

// The changes, sent to the tree as the kernel would send them.

// Rename closes what is being written at oldpath (or below it), then
// renames: the tree commits an inbox file or batch renamed to a final
// name in the RENAME, and its answer is the commit's.
func (f *FS) Rename(oldpath, newpath string) error {
	if f.writes == nil {
		return rofs("rename", oldpath)
	}
	from, to := clean(oldpath), clean(newpath)
	for _, wf := range f.writes.take(under(from)) {
		wf.close(true)
	}
	fromDir, fromName := path.Split(from)
	toDir, toName := path.Split(to)
	src, err := f.t.lookup(clean(fromDir))
	if err != nil {
		return err
	}
	defer f.t.release(src)
	dst, err := f.t.lookup(clean(toDir))
	if err != nil {
		return err
	}
	defer f.t.release(dst)
	in := fuse.RenameIn{InHeader: f.t.header(src.id), Newdir: dst.id}
	st := f.t.raw.Rename(f.t.cancel, &in, fromName, toName)
	f.t.forget(from)
	f.t.forget(to)
	if st != fuse.OK {
		return errno("rename", from, st)
	}
	return nil
}

// Remove unlinks a file (released without FLUSH if it was being
// written) or removes an empty directory.
func (f *FS) Remove(name string) error {
	if f.writes == nil {
		return rofs("remove", name)
	}
	p := clean(name)
	fi, err := f.Lstat(p)
	if err != nil {
		return err
	}
	dir, base := path.Split(p)
	parent, err := f.t.lookup(clean(dir))
	if err != nil {
		return err
	}
	defer f.t.release(parent)
	h := f.t.header(parent.id)
	var st fuse.Status
	if fi.IsDir() {
		st = f.t.raw.Rmdir(f.t.cancel, &h, base)
	} else {
		st = f.t.raw.Unlink(f.t.cancel, &h, base)
	}
	f.t.forget(p)
	for _, wf := range f.writes.take(under(p)) {
		wf.close(false)
	}
	if st != fuse.OK {
		return errno("remove", p, st)
	}
	return nil
}

// Mkdir makes directory p (its parent must exist).
func (f *FS) Mkdir(name string, perm os.FileMode) error {
	return f.make("mkdir", name, func(h fuse.InHeader, base string, out *fuse.EntryOut) fuse.Status {
		return f.t.raw.Mkdir(f.t.cancel, &fuse.MkdirIn{InHeader: h, Mode: uint32(perm.Perm())}, base, out)
	})
}

// Symlink asks the tree to make a symbolic link name to target.
func (f *FS) Symlink(target, name string) error {
	return f.make("symlink", name, func(h fuse.InHeader, base string, out *fuse.EntryOut) fuse.Status {
		return f.t.raw.Symlink(f.t.cancel, &h, target, base, out)
	})
}

// Mknod asks the tree to make a special file name.
func (f *FS) Mknod(name string, mode, rdev uint32) error {
	return f.make("mknod", name, func(h fuse.InHeader, base string, out *fuse.EntryOut) fuse.Status {
		return f.t.raw.Mknod(f.t.cancel, &fuse.MknodIn{InHeader: h, Mode: mode, Rdev: rdev}, base, out)
	})
}

// Link asks the tree to make name a hard link of existing.
func (f *FS) Link(existing, name string) error {
	old, err := f.t.lookup(clean(existing))
	if err != nil {
		return err
	}
	defer f.t.release(old)
	return f.make("link", name, func(h fuse.InHeader, base string, out *fuse.EntryOut) fuse.Status {
		return f.t.raw.Link(f.t.cancel, &fuse.LinkIn{InHeader: h, Oldnodeid: old.id}, base, out)
	})
}

// make sends a request that makes name (MKDIR, SYMLINK, MKNOD, LINK) to
// its directory and remembers the node made; the tree decides (a
// snapshot refuses with EROFS, the inbox takes directories only).
func (f *FS) make(op, name string, send func(h fuse.InHeader, base string, out *fuse.EntryOut) fuse.Status) error {
	if f.writes == nil {
		return rofs(op, name)
	}
	p := clean(name)
	dir, base := path.Split(p)
	parent, err := f.t.lookup(clean(dir))
	if err != nil {
		return err
	}
	defer f.t.release(parent)
	var out fuse.EntryOut
	if st := send(f.t.header(parent.id), base, &out); st != fuse.OK {
		return errno(op, p, st)
	}
	f.t.release(f.t.remember(p, &out, time.Now()))
	return nil
}

// changer sends SETATTR for the attribute changes clients ask for (a
// mode with CREATE, times after a copy); the tree decides.
type changer struct{ f *FS }

func (c changer) setattr(op, name string, in fuse.SetAttrIn) error {
	p := clean(name)
	e, err := c.f.t.lookup(p)
	if err != nil {
		return err
	}
	defer c.f.t.release(e)
	in.InHeader = c.f.t.header(e.id)
	var out fuse.AttrOut
	if st := c.f.t.raw.SetAttr(c.f.t.cancel, &in, &out); st != fuse.OK {
		return errno(op, p, st)
	}
	c.f.t.forget(p) // its attributes changed
	return nil
}

func (c changer) Chmod(name string, mode os.FileMode) error {
	return c.setattr("chmod", name, fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{Valid: fuse.FATTR_MODE, Mode: uint32(mode.Perm())}})
}

func (c changer) Lchown(name string, uid, gid int) error {
	return c.setattr("chown", name, fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{Valid: fuse.FATTR_UID | fuse.FATTR_GID, Owner: fuse.Owner{Uid: uint32(uid), Gid: uint32(gid)}}})
}

func (c changer) Chown(name string, uid, gid int) error { return c.Lchown(name, uid, gid) }

func (c changer) Chtimes(name string, atime, mtime time.Time) error {
	return c.setattr("utimes", name, fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{
		Valid: fuse.FATTR_ATIME | fuse.FATTR_MTIME,
		Atime: uint64(atime.Unix()), Atimensec: uint32(atime.Nanosecond()),
		Mtime: uint64(mtime.Unix()), Mtimensec: uint32(mtime.Nanosecond()),
	}})
}
