package inbox

// File: a staged file, its states from create to commit or refusal, and
// which close decides it.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/nodes"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// File is a file being written into an inbox directory. Its bytes
// live in a local staging file, never in the table, until the commit.
//
// One open for writing at a time: a second open for writing (another
// process, or the same one opening the name again, with or without
// O_TRUNC) while a write handle is open fails with EBUSY, so that two
// writers never share, truncate or interleave one staging file and an
// acknowledgement always means that this writer's bytes are the ones
// committed. Descriptors of the one open (dup, fork) share it.
//
// The file is complete at the last close of the opener's last descriptor:
// a Flush by the process that opened the handle commits only when that
// process holds no other descriptor of the file (dup, dup2, a shell's
// "exec 3>f" with later ">&3": their closes flush too, and are not the
// end). The outcome is decided once, by the first of:
//   - that last close (its close() returns the outcome),
//   - Fsync of any handle,
//   - Release of the last write handle (when the opener's last close was
//     not seen, e.g. the opener exited and a forked child closed last;
//     the result is then only in _status.jsonl, as the kernel ignores
//     Release's),
//
// that finds the file non-empty. An empty file (touch, "> f") stays
// staged without error until written, as mountpoint-s3 does. Later
// Flushes get the same answer: the commit happens once. A write that
// failed (the staging disk is full, the staging budget of --cache-size
// is spent: ENOSPC) makes the file incomplete: its commit is refused with
// that error and errno. The staged file is handed to the Writer, which
// validates and appends it: success returns 0 once the version exists;
// a refusal returns EINVAL (bad file), EROFS (table not writable) or EIO
// (storage trouble, a conflict not resolved in time). Either way the
// staged copy is deleted and the file leaves the inbox: the outcome is in
// _status.jsonl, and the user retries by writing the file again.
//
// A file with a temporary name, or in a scratch directory, is never
// decided by a close, an fsync or a release: it stays staged until a
// rename to a final name commits it (rename.go), it is deleted, or
// SweepInbox removes it once stale.
type File struct {
	fs.Inode

	in    *Inbox
	path  string     // the staging file
	owner fuse.Owner // who created it: a staged file is theirs alone (0600)

	mu     sync.Mutex
	dir    *Dir      // guarded by mu: where the file is (renames move it)
	name   string    // guarded by mu
	active time.Time // guarded by mu: the last create, write, truncate or rename (see SweepInbox)
	// renamedAway: committed by a rename; the kernel may still hold the
	// new name's dentry for a moment (see forgetRenamed): Getattr says
	// ENOENT, as a fresh lookup would.
	renamedAway bool          // guarded by mu
	state       fileState     // guarded by mu
	done        chan struct{} // guarded by mu: closed when the commit ended
	errno       syscall.Errno // guarded by mu: the outcome once stateDone
	writer      *inboxHandle  // guarded by mu: the one open write handle not yet closed for good, or nil
	size        int64         // guarded by mu: the size when the commit began
	// staged is the staging file's size as the writes made it, counted
	// against the mount's staging budget until the file leaves.
	staged   int64 // guarded by mu
	writeErr error // guarded by mu: the first failed write or truncate, which makes the file incomplete
	// noted is the active time a "staged" line was written for (a
	// temporary's close: staged.go).
	noted time.Time // guarded by mu
}

// fileState is where a staged file is in its life.
type fileState int

const (
	stateStaged     fileState = iota // being written, or empty and waiting
	stateCommitting                  // handed to the Writer; writes are refused
	stateDone                        // committed or refused; errno says which
)

var (
	_ = (fs.NodeGetattrer)((*File)(nil))
	_ = (fs.NodeSetattrer)((*File)(nil))
	_ = (fs.NodeOpener)((*File)(nil))
	_ = (fs.NodeReader)((*File)(nil))
	_ = (fs.NodeWriter)((*File)(nil))
	_ = (fs.NodeFlusher)((*File)(nil))
	_ = (fs.NodeFsyncer)((*File)(nil))
	_ = (fs.NodeReleaser)((*File)(nil))
)

// newInboxFile creates the staging file of name in d.
// A staging directory removed under the mount (rm -rf of the cache dir)
// is made again.
//
// The staging file has mode 0666 less the umask (the staging dir, 0700,
// keeps it private): a local commit hard-links it into the table as the
// data file, which other users must be able to read.
func newInboxFile(d *Dir, name string) (*File, error) {
	path, err := createStaged(d.in.staging)
	if errors.Is(err, os.ErrNotExist) {
		if mkErr := os.MkdirAll(d.in.staging, 0o700); mkErr != nil {
			return nil, fmt.Errorf("staging dir %s: %w", d.in.staging, mkErr)
		}
		d.in.tree.Logger().Warn("deltafs: inbox staging dir was removed; made it again", "table", d.in.name, "dir", d.in.staging)
		path, err = createStaged(d.in.staging)
	}
	if err != nil {
		return nil, err
	}
	return &File{in: d.in, dir: d, path: path, name: name, active: time.Now()}, nil
}

// stagedSeq numbers staging files.
var stagedSeq atomic.Uint64

// createStaged creates a new empty staging file in dir, mode 0666 less
// the umask (os.CreateTemp's 0600 became the data file's mode).
func createStaged(dir string) (string, error) {
	for {
		p := filepath.Join(dir, "staged-"+strconv.FormatUint(stagedSeq.Add(1), 10)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36)+".parquet")
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		f.Close()
		return p, nil
	}
}

// discard removes the staging file of a file never shown.
func (f *File) discard() { os.Remove(f.path) }

// rel is the file's path under inbox/.
func (f *File) rel() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.relLocked()
}

// relLocked is rel with f.mu held.
func (f *File) relLocked() string { return path.Join(f.dir.relPath(), f.name) }

// temporaryLocked reports whether the file is staged without a commit
// at close: it has a temporary name or is in a temporary directory
// (see isTemporaryName). A rename to a final name commits it.
func (f *File) temporaryLocked() bool { return f.dir.scratch || isTemporaryName(f.name) }

// Getattr reports the staged size (or the committed size once done).
func (f *File) Getattr(ctx context.Context, h fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.mu.Lock()
	size, mtime, gone := f.size, time.Time{}, f.renamedAway
	f.mu.Unlock()
	if gone {
		return syscall.ENOENT
	}
	if st, err := os.Stat(f.path); err == nil {
		size, mtime = st.Size(), st.ModTime()
	}
	nodes.FillAttr(&out.Attr, f.StableAttr().Ino, syscall.S_IFREG|0o600, f.owner, size, mtime)
	out.SetTimeout(inboxTimeout)
	return 0
}

// Setattr truncates a staged file (ftruncate, O_TRUNC through setattr);
// mode, owner and times are accepted and ignored (touch, cp -p). A
// truncate without a handle (truncate(2), and O_TRUNC: the kernel sends
// it after the open, without the handle) from another process than the
// write handle's opener is EBUSY, as a second open for writing is: it
// would cut another writer's bytes.
func (f *File) Setattr(ctx context.Context, h fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		f.mu.Lock()
		errno := f.writableLocked()
		if _, mine := h.(*inboxHandle); errno == 0 && !mine && f.writer != nil && !sameProcess(f.writer.pid, callerPid(ctx)) {
			errno = syscall.EBUSY
		}
		if errno == 0 {
			errno = f.resizeLocked(int64(size))
		}
		f.mu.Unlock()
		if errno != 0 {
			return errno
		}
	}
	return f.Getattr(ctx, h, out)
}

// resizeLocked truncates (or extends) the staging file to size, within
// the staging budget; a failure makes the file incomplete.
func (f *File) resizeLocked(size int64) syscall.Errno {
	if size > f.staged {
		if err := f.in.env.reserveStaging(size - f.staged); err != nil {
			return f.failLocked(err)
		}
	} else {
		f.in.env.releaseStaging(f.staged - size)
	}
	if err := os.Truncate(f.path, size); err != nil {
		f.in.env.releaseStaging(max(size-f.staged, 0))
		return f.failLocked(err)
	}
	f.staged, f.active = size, time.Now()
	if size == 0 {
		// Emptied: what an earlier failed write left incomplete is gone
		// (a kept temporary file rewritten from the start).
		f.writeErr = nil
	}
	return 0
}

// failLocked records the first failed write or truncate (the file is
// then incomplete and its commit refused) and returns its errno.
func (f *File) failLocked(err error) syscall.Errno {
	if f.writeErr == nil {
		f.writeErr = err
	}
	return fs.ToErrno(err)
}

// writableLocked says whether the content may still change.
func (f *File) writableLocked() syscall.Errno {
	switch f.state {
	case stateCommitting:
		return syscall.EBUSY
	case stateDone:
		return syscall.EROFS
	}
	return 0
}

// Open opens the staged file; O_TRUNC empties it.
func (f *File) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	h, errno := f.open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return h, fuse.FOPEN_DIRECT_IO, 0
}

// open returns a handle on the staging file for the caller's flags; an
// open for writing while another write handle is open is EBUSY (see the
// type's doc).
func (f *File) open(ctx context.Context, flags uint32) (*inboxHandle, syscall.Errno) {
	write := flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != stateStaged {
		return nil, syscall.ESTALE
	}
	if write && f.writer != nil {
		return nil, syscall.EBUSY
	}
	local := os.O_RDWR
	if flags&syscall.O_APPEND != 0 {
		local |= os.O_APPEND
	}
	file, err := os.OpenFile(f.path, local, 0)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	if write && flags&syscall.O_TRUNC != 0 {
		if errno := f.resizeLocked(0); errno != 0 {
			file.Close()
			return nil, errno
		}
	}
	h := &inboxHandle{f: file, write: write, appendMode: local&os.O_APPEND != 0, pid: callerPid(ctx)}
	if write {
		f.writer = h
	}
	return h, 0
}

// Read reads the staged bytes.
func (f *File) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h, ok := fh.(*inboxHandle)
	if !ok {
		return nil, syscall.EBADF
	}
	return h.read(dest, off)
}

// Write writes to the staged file, while it is not being committed and
// within the staging budget (ENOSPC beyond it). A handle whose opener
// closed it for good writes no more (EBADF): a new writer may own the
// file by then.
func (f *File) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	h, ok := fh.(*inboxHandle)
	if !ok || !h.write {
		return 0, syscall.EBADF
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if errno := f.writableLocked(); errno != 0 {
		return 0, errno
	}
	if h.closed {
		return 0, syscall.EBADF
	}
	if h.appendMode {
		off = f.staged
	}
	grow := max(off+int64(len(data))-f.staged, 0)
	if err := f.in.env.reserveStaging(grow); err != nil {
		return 0, f.failLocked(err)
	}
	n, err := h.writeAt(data, off)
	size := max(f.staged, off+int64(n))
	f.in.env.releaseStaging(grow - (size - f.staged))
	f.staged, f.active = size, time.Now()
	if err != nil {
		return uint32(n), f.failLocked(err)
	}
	return uint32(n), 0
}

// Flush decides the outcome at the last close of the opener's last
// descriptor of a write handle (see the type's doc); other closes
// return 0.
func (f *File) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	h, ok := fh.(*inboxHandle)
	pid := callerPid(ctx)
	if !ok || !h.write || !sameProcess(h.pid, pid) {
		return 0
	}
	env := f.in.env
	check := descriptorCheck{mntID: env.mountID.Load(), ino: f.StableAttr().Ino, mode: env.fdinfo,
		path: "/" + f.in.name + "/" + nodes.InboxName + "/" + f.rel()}
	if holdsWriteDescriptor(pid, check) {
		return 0 // a dup of the write descriptor is still open: not the end
	}
	f.closeHandle(h)
	return f.commit(ctx)
}

// closeHandle marks h closed for good: it no longer counts as a writer
// (the next open for writing may proceed) and writes through it fail.
// It reports whether h was the last write handle.
func (f *File) closeHandle(h *inboxHandle) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h.closed {
		return false
	}
	h.closed = true
	if f.writer != h {
		return false
	}
	f.writer = nil
	return true
}

// Fsync through the write handle commits a non-empty file with a final
// name (a temporary one stays staged: its rename commits it). An fsync
// through a handle open for reading, or one whose opener closed it,
// commits nothing and returns 0: only the writer knows the file is
// complete (a reader's fsync used to commit a half-written file).
func (f *File) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	h, ok := fh.(*inboxHandle)
	if !ok || !h.write {
		return 0
	}
	f.mu.Lock()
	closed := h.closed
	f.mu.Unlock()
	if closed {
		return 0
	}
	return f.commit(ctx)
}

// Release closes the handle; the last write handle of a file still
// undecided commits it (its result only reaches _status.jsonl).
func (f *File) Release(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	h, ok := fh.(*inboxHandle)
	if !ok {
		return 0
	}
	h.f.Close()
	if !h.write {
		return 0
	}
	if f.closeHandle(h) {
		f.commit(context.Background())
	}
	return 0
}

// commit decides the outcome once (see the type's doc) and returns it;
// an empty file stays staged and gets 0. Concurrent callers wait for the
// first one's answer.
func (f *File) commit(ctx context.Context) syscall.Errno {
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
	if f.temporaryLocked() {
		e, ok := f.stagedNoteLocked()
		f.mu.Unlock()
		if ok {
			f.in.noteStaged(e)
		}
		return 0 // staged until renamed to a final name (rename.go)
	}
	st, err := os.Stat(f.path)
	if err == nil && st.Size() == 0 && f.writeErr == nil {
		f.mu.Unlock()
		return 0
	}
	if err == nil && f.writeErr != nil {
		err = fmt.Errorf("a write to the staged file failed, so it is incomplete: %w", f.writeErr)
	}
	if err != nil {
		// Not handed to the Writer: refused here, once.
		f.state, f.done = stateCommitting, make(chan struct{})
		rel := f.relLocked()
		f.mu.Unlock()
		f.in.drop(f, true)
		errno := f.in.refuse("commit", rel, err)
		f.finish(errno)
		return errno
	}
	f.state, f.done, f.size = stateCommitting, make(chan struct{}), st.Size()
	rel := f.relLocked()
	sf := StagedFile{LocalPath: f.path, Name: f.name, PartitionValues: f.dir.parts}
	f.mu.Unlock()

	errno := f.in.commit(ctx, f, rel, sf, st.Size())
	f.finish(errno)
	return errno
}

// finish records the outcome of the commit.
func (f *File) finish(errno syscall.Errno) {
	f.mu.Lock()
	f.state, f.errno = stateDone, errno
	close(f.done)
	f.mu.Unlock()
}

// releaseStaged gives the file's bytes back to the staging budget, once
// its staging file is gone.
func (f *File) releaseStaged() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.in.env.releaseStaging(f.staged)
	f.staged = 0
}

// detach removes the file from its directory, in the tree and in the
// kernel's dentry cache; open handles keep working on the node.
func (f *File) detach() {
	name, parent := f.Parent()
	if parent == nil {
		return
	}
	parent.RmChild(name)
	f.ForgetPersistent()
	parent.NotifyEntry(name)
}

// detachQuiet removes the file from the tree without telling the
// kernel: for a RENAME handler, during which the kernel holds the
// directories' locks that a notification would wait for. The entry's
// 1ns timeout (inboxTimeout) makes the kernel look it up again.
func (f *File) detachQuiet() {
	if name, parent := f.Parent(); parent != nil {
		parent.RmChild(name)
	}
	f.ForgetPersistent()
}

// unlink drops the staged file unless it is being committed.
func (f *File) unlink() syscall.Errno {
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
		f.in.env.releaseStaging(f.staged)
		f.staged = 0
		f.in.forget(f)
	}
	f.ForgetPersistent()
	return 0
}
