package nodes

import (
	"context"
	"path"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// SnapshotDir is @vN of a table, or one of its partition directories. Its
// content never changes: entries and attributes get the long kernel
// timeouts, and listings are cached by the kernel (FOPEN_CACHE_DIR).
// Every directory of a snapshot has the snapshot's commit time as mtime.
type SnapshotDir struct {
	fs.Inode
	readOnlyDir

	env   *Env
	table string        // table name in the mount
	view  *snapshotView // shared by every directory of the snapshot
	dir   string        // path inside the snapshot, "" for @vN itself
}

var (
	_ = (fs.NodeGetattrer)((*SnapshotDir)(nil))
	_ = (fs.NodeLookuper)((*SnapshotDir)(nil))
	_ = (fs.NodeOpendirHandler)((*SnapshotDir)(nil))
)

func (d *SnapshotDir) ino() uint64 {
	return stableIno(kindSnapDir, d.table, d.view.snap.Version(), d.dir)
}

func (d *SnapshotDir) fill(a *fuse.Attr) {
	fillAttr(a, d.ino(), modeDir, 0, d.view.snap.Timestamp())
}

// Getattr reports a read-only directory stamped with the commit time.
func (d *SnapshotDir) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.fill(&out.Attr)
	out.SetTimeout(d.env.Opts.LongTimeout)
	return 0
}

// treeDir returns this directory's entries.
func (d *SnapshotDir) treeDir() (*treeDir, syscall.Errno) {
	t, err := d.view.get()
	if err != nil {
		return nil, d.env.metaErrno("list snapshot", err,
			"table", d.table, "version", d.view.snap.Version())
	}
	td, ok := t.dirs[d.dir]
	if !ok {
		return nil, syscall.ENOENT
	}
	return td, 0
}

// Lookup finds a partition directory or a data file. A data file that
// needs rewriting is materialized here, so that its first stat already
// reports the exact size.
func (d *SnapshotDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	td, errno := d.treeDir()
	if errno != 0 {
		return nil, errno
	}
	e, ok := td.lookup(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	p := path.Join(d.dir, name)
	out.SetEntryTimeout(d.env.Opts.LongTimeout)
	out.SetAttrTimeout(d.env.Opts.LongTimeout)
	if e.file == nil {
		child := &SnapshotDir{env: d.env, table: d.table, view: d.view, dir: p}
		child.fill(&out.Attr)
		return d.NewInode(ctx, child, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: child.ino()}), 0
	}
	f := newDataFile(d.env, d.table, d.view.snap, e.file, p)
	if ch := d.GetChild(name); ch != nil {
		if known, ok := ch.Operations().(*DataFile); ok {
			f = known // keeps its size: materialize once per node
		}
	}
	if errno := f.fill(ctx, &out.Attr); errno != 0 {
		return nil, errno
	}
	return d.NewInode(ctx, f, fs.StableAttr{Mode: syscall.S_IFREG, Ino: f.ino()}), 0
}

// OpendirHandle lists the directory and lets the kernel keep the listing.
func (d *SnapshotDir) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	td, errno := d.treeDir()
	if errno != 0 {
		return nil, 0, errno
	}
	version := d.view.snap.Version()
	list := make([]fuse.DirEntry, len(td.entries))
	for i, e := range td.entries {
		p := path.Join(d.dir, e.name)
		if e.file == nil {
			list[i] = fuse.DirEntry{Name: e.name, Mode: syscall.S_IFDIR, Ino: stableIno(kindSnapDir, d.table, version, p)}
		} else {
			list[i] = fuse.DirEntry{Name: e.name, Mode: syscall.S_IFREG, Ino: stableIno(kindFile, d.table, version, p)}
		}
	}
	return fs.NewListDirStream(list), fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}
