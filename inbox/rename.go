package inbox

// Temporary names, scratch directories and the renames that commit them:
// how tools that write a temporary name and rename it into place (rsync,
// mv, os.Rename-style writers, Hadoop/Spark committers) publish through
// the inbox.
//
// A file with a temporary name is staged when closed and not committed;
// renaming it to a final name commits it, and rename() returns once the
// version exists. A scratch directory (made with a temporary name) renamed
// to a final name commits every Parquet file under it as ONE version: a
// batch. A refused rename changes nothing: the file or directory stays
// under its temporary name, so that it can be fixed and renamed again
// (or removed; SweepInbox removes it once stale). Only a storage error,
// after which the commit may have landed, removes it as close() does: a
// second rename could otherwise commit it twice.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/nodes"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// renameNoReplace is RENAME_NOREPLACE: renames in the inbox never replace.
const renameNoReplace = 1

// isTemporaryName reports whether a file name is temporary: a leading "."
// (rsync's .NAME.XXXXXX, editors) or "_" (Hadoop's _temporary, _SUCCESS;
// not with "=", see isTemporaryDirName),
// or a name not ending in ".parquet", in any case (x.parquet.tmp, x.part).
// Such a file is staged when closed; only a rename to a final name
// commits it.
func isTemporaryName(name string) bool {
	return isTemporaryDirName(name) || !strings.HasSuffix(strings.ToLower(name), ".parquet")
}

// isTemporaryDirName reports whether a directory name is temporary: a
// leading ".", or a leading "_" without "=". Such a directory is a
// scratch directory. "_" with "=" is a partition directory of a column
// whose name starts with "_" (_2=bar): Spark's rule for the names its
// file listing hides (InMemoryFileIndex.shouldFilterOutPathName).
func isTemporaryDirName(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") && !strings.Contains(name, "=")
}

// mkScratch makes the scratch directory name in d.
func (d *Dir) mkScratch(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if err := checkFileName(name); err != nil {
		return nil, d.in.refuse("mkdir", d.relOf(name), err)
	}
	if d.GetChild(name) != nil {
		return nil, syscall.EEXIST
	}
	if errno := d.in.lockedOut(d); errno != 0 {
		return nil, errno
	}
	sub := &Dir{in: d.in, scratch: true}
	sub.touch()
	d.touch()
	n := d.NewPersistentInode(ctx, sub, fs.StableAttr{Mode: syscall.S_IFDIR})
	sub.fill(ctx, &out.Attr)
	out.SetEntryTimeout(inboxTimeout)
	out.SetAttrTimeout(inboxTimeout)
	return n, 0
}

// busy reports whether d is in a batch being committed: nothing may be
// added, removed or moved there until the commit ends.
func (in *Inbox) busy(d *Dir) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.lockedOutLocked(d) == syscall.EBUSY
}

// lockedOut is lockedOutLocked taking in.mu.
func (in *Inbox) lockedOut(d *Dir) syscall.Errno {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.lockedOutLocked(d)
}

// lockedOutLocked returns EBUSY when d is in a batch being committed,
// ENOENT when it is in one committed (removed from the tree: the kernel
// may still hold its dentry), else 0. in.mu is held.
func (in *Inbox) lockedOutLocked(d *Dir) syscall.Errno {
	for n := d.EmbeddedInode(); n != nil; _, n = n.Parent() {
		sd, ok := n.Operations().(*Dir)
		if !ok {
			continue
		}
		if in.batches[sd] {
			return syscall.EBUSY
		}
		if sd.gone.Load() {
			return syscall.ENOENT
		}
	}
	return 0
}

// Rename moves a staged file or a scratch directory within the inbox; a
// move to a final name commits it (see the file's doc).
func (d *Dir) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if flags&^renameNoReplace != 0 {
		return syscall.EINVAL // RENAME_EXCHANGE, RENAME_WHITEOUT
	}
	dst, ok := newParent.(*Dir)
	if !ok || dst.in != d.in {
		return syscall.EXDEV
	}
	ch := d.GetChild(name)
	if ch == nil {
		return syscall.ENOENT
	}
	if err := checkFileName(newName); err != nil {
		return d.in.refuse("rename", dst.relOf(newName), err)
	}
	if dst.GetChild(newName) != nil {
		return syscall.EEXIST
	}
	if d.in.busy(d) || d.in.busy(dst) {
		return syscall.EBUSY
	}
	switch op := ch.Operations().(type) {
	case *File:
		return d.in.renameFile(ctx, op, dst, newName)
	case *Dir:
		if !op.scratch {
			return syscall.EPERM // a partition directory: its files' values would change
		}
		if dst.scratch || isTemporaryDirName(newName) {
			dst.touch()
			return 0 // a scratch directory moves; nothing is committed
		}
		return d.in.commitBatch(ctx, op, dst, newName)
	}
	return syscall.EPERM
}

// renameFile moves f to dst/name, committing it when that is a final
// place: a temporary file with content and no open write handle. A file
// still open for writing just moves (its last close commits it, as for a
// file written under a final name), and so does an empty one (as after
// touch, it waits to be written).
func (in *Inbox) renameFile(ctx context.Context, f *File, dst *Dir, name string) syscall.Errno {
	rel, from := dst.relOf(name), f.rel()
	final := !dst.scratch && !isTemporaryName(name)
	if final {
		if err := in.writable(ctx); err != nil {
			return in.refuseRename(rel, from, err)
		}
		if err := in.checkLeaf(ctx, dst); err != nil {
			return in.refuseRename(rel, from, err)
		}
	}
	f.mu.Lock()
	// Checked again under f.mu, where the move happens: a batch taking
	// dst starts either before (EBUSY here) or after (it sees f.dir).
	if f.state != stateStaged || in.busy(dst) {
		f.mu.Unlock()
		return syscall.EBUSY
	}
	if !final || f.writer != nil || (f.staged == 0 && f.writeErr == nil) {
		f.dir, f.name, f.active = dst, name, time.Now()
		f.mu.Unlock()
		dst.touch()
		return 0
	}
	if f.writeErr != nil {
		// Kept: truncating and writing it again clears the error.
		err := fmt.Errorf("%s: a write to the staged file failed, so it is incomplete: %w", from, f.writeErr)
		f.mu.Unlock()
		return in.refuseRename(rel, from, err)
	}
	f.state, f.done = stateCommitting, make(chan struct{})
	size := f.staged
	f.mu.Unlock()

	sf := StagedFile{LocalPath: f.path, Name: rel, PartitionValues: dst.parts}
	start := time.Now()
	cctx, cancel := in.commitContext(ctx)
	defer cancel()
	v, err := in.writer.Append(cctx, []StagedFile{sf})
	if err == nil {
		f.mu.Lock()
		f.renamedAway = true
		f.mu.Unlock()
		in.drop(f, false)
		f.finish(0)
		in.published(context.WithoutCancel(ctx), StatusEvent{Op: "commit", File: rel, From: from, Bytes: size, Version: &v}, start)
		forgetRenamed(dst, name)
		return 0
	}
	if keepOnRefusal(err) {
		f.restage() // back to staged, under its temporary name
	} else {
		in.drop(f, false)
		f.finish(syscall.EIO)
	}
	return in.refuseRename(rel, from, err)
}

// keepOnRefusal reports whether a refused rename leaves the staged files
// as they were: a refusal of the file or table decided before anything
// was written. After storage trouble the commit may have landed.
func keepOnRefusal(err error) bool {
	return errors.Is(err, nodes.ErrInvalidFile) || errors.Is(err, nodes.ErrNotWritable)
}

// refuseRename records a refused rename of from to rel (paths under
// inbox/) and returns its errno.
// The same rename refused for the same reason again within
// repeatRefusalWindow is not recorded twice: coreutils mv retries a
// renameat2 refused with EINVAL as a plain rename.
func (in *Inbox) refuseRename(rel, from string, err error) syscall.Errno {
	err = nodes.CommitError(err)
	r := renameRefusal{rel: rel, from: from, reason: err.Error(), at: time.Now()}
	if errno, ok := in.repeatedRefusal(r); ok {
		return errno
	}
	errno := in.tree.InboxErrno("rename", err, "table", in.name, "file", rel, "from", from)
	if errno != syscall.EINTR {
		in.status.add(StatusEvent{Op: "rename", File: rel, From: from, Error: r.reason, Errno: nodes.ErrnoName(errno)})
		r.errno = errno
		in.mu.Lock()
		in.lastRefusal = r
		in.mu.Unlock()
	}
	return errno
}

// repeatRefusalWindow is how soon a repeated refused rename counts as
// the same one.
const repeatRefusalWindow = 2 * time.Second

// renameRefusal is a refused rename of from to rel, for the reason.
type renameRefusal struct {
	rel, from, reason string
	errno             syscall.Errno
	at                time.Time
}

// repeatedRefusal returns the errno of the last refusal when r repeats
// it at once.
func (in *Inbox) repeatedRefusal(r renameRefusal) (syscall.Errno, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	last := in.lastRefusal
	if last.errno == 0 || last.rel != r.rel || last.from != r.from || last.reason != r.reason || r.at.Sub(last.at) > repeatRefusalWindow {
		return 0, false
	}
	return last.errno, true
}

// restage puts a file whose commit was refused back to staged.
func (f *File) restage() {
	f.mu.Lock()
	f.state = stateStaged
	close(f.done)
	f.mu.Unlock()
}

// abandon decides a staged file that is removed without a commit (a
// temporary file of a batch, a stale file): open handles write no more
// and their close() returns 0, as for an unlinked file.
func (f *File) abandon() {
	f.mu.Lock()
	if f.state == stateStaged {
		f.state, f.errno = stateDone, 0
	}
	f.mu.Unlock()
}

// forgetRenamed tells the kernel that dir/name, where a committed rename
// just put its dentry, is gone: the entry's short timeout is a jiffy,
// and a stat right after the rename would still find it. The kernel
// holds dir's lock until the rename completes and the notification
// waits for it, so it runs after the reply, on its own goroutine; it
// ends when the kernel took it (or the mount is gone).
func forgetRenamed(dir *Dir, name string) {
	go dir.NotifyEntry(name)
}
