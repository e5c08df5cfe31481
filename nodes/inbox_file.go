package nodes

import (
	"context"
	"os"
	"path"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// InboxFile is a file being written into an inbox directory. Its bytes
// live in a local staging file, never in the table, until the commit.
//
// The outcome is decided once, by the first of:
//   - Flush (close) of a write handle by the process that opened it,
//   - Fsync of any handle,
//   - Release of the last write handle (a close by another process than
//     the opener, e.g. after fork; the result is then only in
//     _status.jsonl, as the kernel ignores Release's),
//
// that finds the file non-empty. An empty file (touch, "> f") stays
// staged without error until written, as mountpoint-s3 does. Later
// Flushes (dup'd descriptors, other handles) get the same answer: the
// commit happens once. The staged file is handed to the Writer, which
// validates and appends it: success returns 0 once the version exists;
// a refusal returns EINVAL (bad file), EROFS (table not writable) or EIO
// (storage trouble, a conflict not resolved in time). Either way the
// staged copy is deleted and the file leaves the inbox: the outcome is in
// _status.jsonl, and the user retries by writing the file again.
type InboxFile struct {
	fs.Inode

	in   *inbox
	dir  *InboxDir // constant: renames stay within dir
	path string    // the staging file

	mu      sync.Mutex
	name    string        // guarded by mu
	state   fileState     // guarded by mu
	done    chan struct{} // guarded by mu: closed when the commit ended
	errno   syscall.Errno // guarded by mu: the outcome once stateDone
	writers int           // guarded by mu: open write handles
	size    int64         // guarded by mu: the size when the commit began
}

// fileState is where a staged file is in its life.
type fileState int

const (
	stateStaged     fileState = iota // being written, or empty and waiting
	stateCommitting                  // handed to the Writer; writes are refused
	stateDone                        // committed or refused; errno says which
)

var (
	_ = (fs.NodeGetattrer)((*InboxFile)(nil))
	_ = (fs.NodeSetattrer)((*InboxFile)(nil))
	_ = (fs.NodeOpener)((*InboxFile)(nil))
	_ = (fs.NodeReader)((*InboxFile)(nil))
	_ = (fs.NodeWriter)((*InboxFile)(nil))
	_ = (fs.NodeFlusher)((*InboxFile)(nil))
	_ = (fs.NodeFsyncer)((*InboxFile)(nil))
	_ = (fs.NodeReleaser)((*InboxFile)(nil))
)

// newInboxFile creates the staging file of name in d.
func newInboxFile(d *InboxDir, name string) (*InboxFile, error) {
	tmp, err := os.CreateTemp(d.in.staging, "staged-*.parquet")
	if err != nil {
		return nil, err
	}
	tmp.Close()
	return &InboxFile{in: d.in, dir: d, path: tmp.Name(), name: name}, nil
}

// discard removes the staging file of a file never shown.
func (f *InboxFile) discard() { os.Remove(f.path) }

// rel is the file's path under inbox/.
func (f *InboxFile) rel() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return path.Join(f.dir.rel, f.name)
}

// Getattr reports the staged size (or the committed size once done).
func (f *InboxFile) Getattr(ctx context.Context, h fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.mu.Lock()
	size, mtime := f.size, time.Time{}
	f.mu.Unlock()
	if st, err := os.Stat(f.path); err == nil {
		size, mtime = st.Size(), st.ModTime()
	}
	fillAttr(&out.Attr, f.StableAttr().Ino, syscall.S_IFREG|0o644, size, mtime)
	out.SetTimeout(inboxTimeout)
	return 0
}

// Setattr truncates a staged file (ftruncate, O_TRUNC through setattr);
// mode, owner and times are accepted and ignored (touch, cp -p).
func (f *InboxFile) Setattr(ctx context.Context, h fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		f.mu.Lock()
		errno := f.writableLocked()
		if errno == 0 {
			errno = fs.ToErrno(os.Truncate(f.path, int64(size)))
		}
		f.mu.Unlock()
		if errno != 0 {
			return errno
		}
	}
	return f.Getattr(ctx, h, out)
}

// writableLocked says whether the content may still change.
func (f *InboxFile) writableLocked() syscall.Errno {
	switch f.state {
	case stateCommitting:
		return syscall.EBUSY
	case stateDone:
		return syscall.EROFS
	}
	return 0
}

// Open opens the staged file; O_TRUNC empties it.
func (f *InboxFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	h, errno := f.open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return h, fuse.FOPEN_DIRECT_IO, 0
}

// open returns a handle on the staging file for the caller's flags.
func (f *InboxFile) open(ctx context.Context, flags uint32) (*inboxHandle, syscall.Errno) {
	write := flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != stateStaged {
		return nil, syscall.ESTALE
	}
	local := os.O_RDWR
	if flags&syscall.O_APPEND != 0 {
		local |= os.O_APPEND
	}
	if write && flags&syscall.O_TRUNC != 0 {
		local |= os.O_TRUNC
	}
	file, err := os.OpenFile(f.path, local, 0)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	if write {
		f.writers++
	}
	return &inboxHandle{f: file, write: write, appendMode: local&os.O_APPEND != 0, pid: callerPid(ctx)}, 0
}

// Read reads the staged bytes.
func (f *InboxFile) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h, ok := fh.(*inboxHandle)
	if !ok {
		return nil, syscall.EBADF
	}
	return h.read(dest, off)
}

// Write writes to the staged file, while it is not being committed.
func (f *InboxFile) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	h, ok := fh.(*inboxHandle)
	if !ok || !h.write {
		return 0, syscall.EBADF
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if errno := f.writableLocked(); errno != 0 {
		return 0, errno
	}
	return h.writeAt(data, off)
}

// Flush decides the outcome when the opener closes a write handle.
func (f *InboxFile) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	h, ok := fh.(*inboxHandle)
	if !ok || !h.write || !sameProcess(h.pid, callerPid(ctx)) {
		return 0
	}
	return f.commit(ctx)
}

// Fsync commits a non-empty file.
func (f *InboxFile) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	return f.commit(ctx)
}

// Release closes the handle; the last write handle of a file still
// undecided commits it (its result only reaches _status.jsonl).
func (f *InboxFile) Release(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	h, ok := fh.(*inboxHandle)
	if !ok {
		return 0
	}
	h.f.Close()
	if !h.write {
		return 0
	}
	f.mu.Lock()
	f.writers--
	last := f.writers == 0 && f.state == stateStaged
	f.mu.Unlock()
	if last {
		f.commit(context.Background())
	}
	return 0
}

// commit decides the outcome once (see the type's doc) and returns it;
// an empty file stays staged and gets 0. Concurrent callers wait for the
// first one's answer.
func (f *InboxFile) commit(ctx context.Context) syscall.Errno {
	f.mu.Lock()
	switch f.state {
	case stateDone:
		defer f.mu.Unlock()
		return f.errno
	case stateCommitting:
		done := f.done
		f.mu.Unlock()
		<-done
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.errno
	}
	st, err := os.Stat(f.path)
	if err != nil || st.Size() == 0 {
		f.mu.Unlock()
		if err != nil {
			return f.in.refuse("commit", f.rel(), err)
		}
		return 0
	}
	f.state, f.done, f.size = stateCommitting, make(chan struct{}), st.Size()
	rel := path.Join(f.dir.rel, f.name)
	sf := StagedFile{LocalPath: f.path, Name: f.name, PartitionValues: f.dir.parts}
	f.mu.Unlock()

	errno := f.in.commit(ctx, f, rel, sf, st.Size())

	f.mu.Lock()
	f.state, f.errno = stateDone, errno
	close(f.done)
	f.mu.Unlock()
	return errno
}

// detach removes the file from its directory, in the tree and in the
// kernel's dentry cache; open handles keep working on the node.
func (f *InboxFile) detach() {
	name, parent := f.Parent()
	if parent == nil {
		return
	}
	parent.RmChild(name)
	f.ForgetPersistent()
	parent.NotifyEntry(name)
}

// unlink drops the staged file unless it is being committed.
func (f *InboxFile) unlink() syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch f.state {
	case stateCommitting:
		return syscall.EBUSY
	case stateStaged:
		// Open handles may still close: nothing is committed, and
		// close() succeeds as for any unlinked file.
		f.state, f.errno = stateDone, 0
		os.Remove(f.path)
	}
	f.ForgetPersistent()
	return 0
}

// rename gives the staged file a new name (the tree moves it after).
func (f *InboxFile) rename(name string) syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != stateStaged {
		return syscall.EBUSY
	}
	f.name = name
	return 0
}
