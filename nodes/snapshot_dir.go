package nodes

import (
	"context"
	"path"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/delta"
)

// SnapshotDir is @vN of a table, or one of its partition directories. Its
// content never changes: entries and attributes get the long kernel
// timeouts, and listings are cached by the kernel (FOPEN_CACHE_DIR).
// Every directory of a snapshot has the version's commit time as mtime.
//
// It keeps only its version (snapRef), not the snapshot: looking up or
// stat-ing @vN builds nothing; the snapshot is built (or found in the
// table's cache) when a name inside it is looked up or it is listed.
type SnapshotDir struct {
	fs.Inode
	readOnlyDir

	ref *snapRef // shared by every directory and file of the snapshot
	dir string   // path inside the snapshot, "" for @vN itself
}

var (
	_ = (fs.NodeGetattrer)((*SnapshotDir)(nil))
	_ = (fs.NodeLookuper)((*SnapshotDir)(nil))
	_ = (fs.NodeOpendirHandler)((*SnapshotDir)(nil))
)

func (d *SnapshotDir) ino() uint64 {
	return StableIno(kindSnapDir, d.ref.name, d.ref.version, d.dir)
}

func (d *SnapshotDir) fill(a *fuse.Attr) {
	acc := d.ref.dir.access()
	FillAttr(a, d.ino(), acc.Dir(), acc.Owner, 0, d.ref.mtime)
}

// Getattr reports a read-only directory stamped with the commit time.
func (d *SnapshotDir) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.fill(&out.Attr)
	out.SetTimeout(d.ref.env.Opts.LongTimeout)
	return 0
}

// treeDir returns this directory's entries and the tree they belong to.
func (d *SnapshotDir) treeDir(ctx context.Context) (*snapshotTree, *treeDir, syscall.Errno) {
	t, err := d.ref.tree(ctx)
	if err != nil {
		return nil, nil, d.ref.env.metaErrno("list snapshot", err,
			"table", d.ref.name, "version", d.ref.version)
	}
	td, ok := t.dirs[d.dir]
	if !ok {
		return nil, nil, syscall.ENOENT
	}
	return t, td, 0
}

// Lookup finds a partition directory or a data file. A data file that
// needs rewriting is materialized here, so that its first stat already
// reports the exact size (or, if that fails, the stored size: see
// DataFile.statSize).
func (d *SnapshotDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	t, td, errno := d.treeDir(ctx)
	if errno != 0 {
		return nil, errno
	}
	e, ok := td.lookup(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	p := path.Join(d.dir, name)
	out.SetEntryTimeout(d.ref.env.Opts.LongTimeout)
	out.SetAttrTimeout(d.ref.env.Opts.LongTimeout)
	if e.add == nil {
		child := &SnapshotDir{ref: d.ref, dir: p}
		child.ro = roNode{d.ref.env, &child.Inode}
		child.fill(&out.Attr)
		return d.NewInode(ctx, child, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: child.ino()}), 0
	}
	d.warm(ctx, td)
	f := newDataFile(d.ref, t, e.add, p)
	if ch := d.GetChild(name); ch != nil {
		if known, ok := ch.Operations().(*DataFile); ok {
			f = known // keeps its size: materialize once per node
		}
	}
	timeout, errno := f.fill(ctx, &out.Attr)
	if errno != 0 {
		return nil, errno
	}
	out.SetEntryTimeout(timeout)
	out.SetAttrTimeout(timeout)
	return d.NewInode(ctx, f, fs.StableAttr{Mode: syscall.S_IFREG, Ino: f.ino()}), 0
}

// lookupKnown is Lookup of the data file add (entry name) when its served
// size is known without reading anything, and ENOENT otherwise: a
// listing's attributes never wait for storage.
func (d *SnapshotDir) lookupKnown(ctx context.Context, name string, add *delta.Add, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if d.ref.files == nil {
		return nil, syscall.ENOENT
	}
	known := false
	if ch := d.GetChild(name); ch != nil {
		f, ok := ch.Operations().(*DataFile)
		known = ok && f.size.Load() >= 0
	}
	if !known {
		snap, err := d.ref.snapshot(ctx)
		if err != nil {
			return nil, syscall.ENOENT
		}
		if _, known = d.ref.files.KnownSize(snap, add); !known {
			return nil, syscall.ENOENT
		}
	}
	return d.Lookup(ctx, name, out)
}

// OpendirHandle lists the directory (see snapshotStream) and lets the
// kernel keep the listing.
func (d *SnapshotDir) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	t, td, errno := d.treeDir(ctx)
	if errno != 0 {
		return nil, 0, errno
	}
	return &snapshotStream{dir: d, tree: t, td: td}, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// warm hints the sizes of td's files to the table's Files at the first
// lookup of one of them: a stat of one file of a directory is usually the
// first of a listing's (ls -l, a glob opening every file).
func (d *SnapshotDir) warm(ctx context.Context, td *treeDir) {
	if d.ref.files == nil || td.warmed.Swap(true) {
		return
	}
	snap, err := d.ref.snapshot(ctx)
	if err != nil {
		return // the lookup reports it
	}
	adds := make([]*delta.Add, 0, len(td.entries))
	for _, e := range td.entries {
		if e.add != nil {
			adds = append(adds, e.add)
		}
	}
	d.ref.files.Warm(snap, adds)
}
