package inbox

// Dir: the inbox directory and its partition and scratch directories,
// what may be created, renamed and removed in them.

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"path"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/nodes"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Dir is MOUNTPOINT/<table>/inbox or one of its partition
// directories inbox/<col>=<value>/...: files created in a leaf directory
// (the inbox root of an unpartitioned table, depth = number of partition
// columns otherwise) are staged and appended when closed (see File).
//
// The tree under it lives in memory only, for this mount: partition
// directories made with mkdir (only the next partition column, with a
// value of its type: EINVAL otherwise) and staged files. Its mode is
// 0755 when the table is writable, else 0555: creating then fails with
// EROFS and the root holds _deltafs_error.txt saying why. The root also
// holds _status.jsonl.
//
// A directory made with a temporary name ("." or "_" first) anywhere in
// the inbox is a scratch directory: under it any names go, and no file is
// committed by close(); renaming it to a final name commits its Parquet
// files as one version (a batch, see rename.go).
//
// Allowed: create, unlink of a staged file not being committed, rmdir of
// an empty partition or scratch dir, rename of a staged file or scratch
// dir to a free name anywhere in the same inbox (a rename to a final name
// commits: rename.go; EXDEV out of the inbox, so mv copies; EBUSY
// while it commits; EEXIST onto a taken name), setattr of directories
// (accepted, not kept). Refused: renaming a partition dir, symlinks, hard
// links and special files (EPERM).
type Dir struct {
	fs.Inode

	in    *Inbox
	rel   string             // path under inbox/, "" at the root; unused in a scratch dir (it moves: relPath)
	parts map[string]*string // partition column (logical) -> value, for files here; nil in a scratch dir
	// scratch: a temporary directory or one inside it (see the type's doc).
	scratch bool
	active  atomic.Int64 // unix nanoseconds of the last entry made or moved in (SweepInbox)
	// gone: a batch committed (see File.renamedAway).
	gone atomic.Bool
}

var (
	_ = (fs.NodeGetattrer)((*Dir)(nil))
	_ = (fs.NodeSetattrer)((*Dir)(nil))
	_ = (fs.NodeLookuper)((*Dir)(nil))
	_ = (fs.NodeReaddirer)((*Dir)(nil))
	_ = (fs.NodeCreater)((*Dir)(nil))
	_ = (fs.NodeMkdirer)((*Dir)(nil))
	_ = (fs.NodeUnlinker)((*Dir)(nil))
	_ = (fs.NodeRmdirer)((*Dir)(nil))
	_ = (fs.NodeRenamer)((*Dir)(nil))
	_ = (fs.NodeSymlinker)((*Dir)(nil))
	_ = (fs.NodeLinker)((*Dir)(nil))
	_ = (fs.NodeMknoder)((*Dir)(nil))
)

func (d *Dir) ino() uint64 {
	if d.scratch {
		return d.StableAttr().Ino // go-fuse's number: the directory moves
	}
	return nodes.StableIno(nodes.KindInbox, d.in.name, 0, "/"+d.rel)
}

// relPath is the directory's path under inbox/ as of now.
func (d *Dir) relPath() string {
	if !d.scratch {
		return d.rel
	}
	d.in.mu.Lock()
	root := d.in.root
	d.in.mu.Unlock()
	return d.Path(root)
}

// fill reports a directory writable only while the table is: 0755 and
// the mount's owner, or _delta_log's owner and mode when the table
// mirrors its source (TableDir.MirrorPerms).
func (d *Dir) fill(ctx context.Context, a *fuse.Attr) {
	acc := d.in.dir.InboxAccess()
	mode := syscall.S_IFDIR | acc.Perm&0o777
	if errors.Is(d.in.writable(ctx), nodes.ErrNotWritable) {
		mode = acc.Dir()
	}
	nodes.FillAttr(a, d.ino(), mode, acc.Owner, 0, time.Time{})
}

// Getattr reports the directory.
func (d *Dir) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if d.gone.Load() {
		return syscall.ENOENT
	}
	d.fill(ctx, &out.Attr)
	out.SetTimeout(d.in.tree.Opts.ShortTimeout)
	return 0
}

// Setattr accepts chmod, chown and utimes of the directory and keeps
// none of them, as for staged files: rsync -a, cp -a and Hadoop's mkdirs
// set them on the directories they make.
func (d *Dir) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return d.Getattr(ctx, f, out)
}

// infoNames are the files of the root besides staged ones, as of now.
func (d *Dir) infoNames(ctx context.Context) []string {
	if d.rel != "" || d.scratch {
		return nil
	}
	if d.in.writable(ctx) != nil {
		return []string{nodes.ReasonName, StatusName}
	}
	return []string{StatusName}
}

// Lookup finds a staged file, a partition directory or an info file.
func (d *Dir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if slices.Contains(d.infoNames(ctx), name) {
		return d.infoChild(ctx, name, out), 0
	}
	if name == nodes.ReasonName || name == StatusName {
		return nil, syscall.ENOENT
	}
	ch := d.GetChild(name)
	if ch == nil {
		return nil, syscall.ENOENT
	}
	var a fuse.AttrOut
	if ga, ok := ch.Operations().(fs.NodeGetattrer); ok {
		if errno := ga.Getattr(ctx, nil, &a); errno != 0 {
			return nil, errno // committed away while we looked
		}
	}
	out.Attr = a.Attr
	out.SetEntryTimeout(inboxTimeout)
	out.SetAttrTimeout(a.Timeout())
	return ch, 0
}

// infoChild returns _status.jsonl or _deltafs_error.txt.
func (d *Dir) infoChild(ctx context.Context, name string, out *fuse.EntryOut) *fs.Inode {
	f := &InfoFile{in: d.in, name: name}
	acc := d.in.dir.InboxAccess()
	nodes.FillAttr(&out.Attr, f.ino(), acc.File(), acc.Owner, int64(len(f.text(ctx))), time.Time{})
	out.SetEntryTimeout(inboxTimeout)
	out.SetAttrTimeout(inboxTimeout)
	if ch := d.GetChild(name); ch != nil {
		return ch
	}
	return d.NewInode(ctx, f, fs.StableAttr{Mode: syscall.S_IFREG, Ino: f.ino()})
}

// Readdir lists the partition directories, the staged files and the info
// files.
func (d *Dir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	info := d.infoNames(ctx)
	var list []fuse.DirEntry
	for name, ch := range d.Children() {
		if sub, ok := ch.Operations().(*Dir); ok && sub.gone.Load() {
			continue // a committed batch a racing LOOKUP put back (see Lookup)
		}
		if name != nodes.ReasonName && name != StatusName {
			list = append(list, fuse.DirEntry{Name: name, Mode: ch.Mode(), Ino: ch.StableAttr().Ino})
		}
	}
	for _, name := range info {
		f := &InfoFile{in: d.in, name: name}
		list = append(list, fuse.DirEntry{Name: name, Mode: syscall.S_IFREG, Ino: f.ino()})
	}
	slices.SortFunc(list, func(a, b fuse.DirEntry) int { return cmp.Compare(a.Name, b.Name) })
	return fs.NewListDirStream(list), 0
}

// relOf is the inbox path of name in d.
func (d *Dir) relOf(name string) string { return path.Join(d.relPath(), name) }

// Create stages a new file (see File). A reserved or malformed name,
// or a directory that is not a leaf partition directory, is EINVAL; an
// unwritable table EROFS. Refusals are recorded in _status.jsonl.
func (d *Dir) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if err := d.in.checkCreate(ctx, d, name); err != nil {
		return nil, nil, 0, d.in.refuse("create", d.relOf(name), err)
	}
	if d.GetChild(name) != nil {
		return nil, nil, 0, syscall.EEXIST
	}
	if d.in.busy(d) {
		return nil, nil, 0, syscall.EBUSY
	}
	f, err := newInboxFile(d, name)
	if err != nil {
		return nil, nil, 0, d.in.refuse("create", d.relOf(name), err)
	}
	if c, ok := fuse.FromContext(ctx); ok {
		f.owner = c.Owner
	}
	if errno := d.in.admit(f, d); errno != 0 {
		f.discard()
		return nil, nil, 0, errno
	}
	if hook := testHookAdmitted.Load(); hook != nil {
		(*hook)(d, name)
	}
	h, errno := f.open(ctx, flags)
	if errno != 0 {
		d.in.forget(f)
		f.discard()
		return nil, nil, 0, errno
	}
	d.touch()
	n := d.NewPersistentInode(ctx, f, fs.StableAttr{Mode: syscall.S_IFREG})
	var a fuse.AttrOut
	f.Getattr(ctx, h, &a)
	out.Attr = a.Attr
	out.SetEntryTimeout(inboxTimeout)
	out.SetAttrTimeout(inboxTimeout)
	return n, h, fuse.FOPEN_DIRECT_IO, 0
}

// testHookAdmitted, set by tests only, runs in Create between the
// lock-out check and go-fuse putting the file in the tree.
var testHookAdmitted atomic.Pointer[func(d *Dir, name string)]

// Mkdir makes the partition directory name = "<col>=<value>" for the next
// partition column, or a scratch directory (a temporary name, or any
// name inside a scratch directory).
func (d *Dir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if err := d.in.writable(ctx); err != nil {
		return nil, d.in.refuse("mkdir", d.relOf(name), err)
	}
	if d.scratch || isTemporaryDirName(name) {
		return d.mkScratch(ctx, name, out)
	}
	col, val, err := d.in.partitionDir(ctx, len(d.parts), name)
	if err != nil {
		return nil, d.in.refuse("mkdir", d.relOf(name), err)
	}
	if d.GetChild(name) != nil {
		return nil, syscall.EEXIST
	}
	if errno := d.in.lockedOut(d); errno != 0 {
		return nil, errno
	}
	parts := maps.Clone(d.parts)
	if parts == nil {
		parts = map[string]*string{}
	}
	parts[col] = val
	sub := &Dir{in: d.in, rel: d.relOf(name), parts: parts}
	sub.fill(ctx, &out.Attr)
	return d.NewPersistentInode(ctx, sub, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: sub.ino()}), 0
}

// Unlink drops a staged file that is not being committed.
func (d *Dir) Unlink(ctx context.Context, name string) syscall.Errno {
	ch := d.GetChild(name)
	if ch == nil {
		return syscall.ENOENT
	}
	if d.in.busy(d) {
		return syscall.EBUSY
	}
	f, ok := ch.Operations().(*File)
	if !ok {
		return syscall.EPERM
	}
	return f.unlink()
}

// Rmdir removes an empty partition directory.
func (d *Dir) Rmdir(ctx context.Context, name string) syscall.Errno {
	ch := d.GetChild(name)
	if ch == nil {
		return syscall.ENOENT
	}
	if _, ok := ch.Operations().(*Dir); !ok {
		return syscall.ENOTDIR
	}
	if len(ch.Children()) > 0 {
		return syscall.ENOTEMPTY
	}
	if d.in.busy(d) {
		return syscall.EBUSY
	}
	ch.ForgetPersistent()
	return 0
}

// Symlink is refused: the inbox takes regular files only.
func (d *Dir) Symlink(context.Context, string, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Link is refused.
func (d *Dir) Link(context.Context, fs.InodeEmbedder, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Mknod is refused (special files, and regular files made without open).
func (d *Dir) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}
