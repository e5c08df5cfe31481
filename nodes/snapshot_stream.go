package nodes

import (
	"context"
	"path"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// snapshotStream is the open handle of a snapshot directory. It reads the
// directory's entries straight from the snapshot's tree (no copy), and it
// answers READDIRPLUS with attributes for subdirectories, and for a data
// file only when its entries are being stat-ed and its size is at hand
// (see Lookup). Other data files get none (a zero node id, "no attributes
// for this entry" to the kernel), so that find, ls -R or a glob over
// 1,000,000 files creates no inode and no node per file in the mount; a
// stat of a file then looks it up (SnapshotDir.Lookup), and only what is
// stat-ed costs memory.
type snapshotStream struct {
	dir  *SnapshotDir
	tree *snapshotTree
	td   *treeDir // the directory's entries in tree
	pos  int
}

var (
	_ = (fs.FileReaddirenter)((*snapshotStream)(nil))
	_ = (fs.FileSeekdirer)((*snapshotStream)(nil))
	_ = (fs.FileLookuper)((*snapshotStream)(nil))
)

// Readdirent returns the next entry; offsets are entry index + 1.
func (s *snapshotStream) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if s.pos >= len(s.td.entries) {
		return nil, 0
	}
	e := s.td.entries[s.pos]
	s.pos++
	d := s.dir
	de := &fuse.DirEntry{Name: e.name, Mode: syscall.S_IFREG, Off: uint64(s.pos)}
	if e.add != nil {
		de.Ino = fileIno(d.ref.name, e.add, s.tree.servedAs)
	} else {
		de.Mode, de.Ino = syscall.S_IFDIR, StableIno(kindSnapDir, d.ref.name, d.ref.version, path.Join(d.dir, e.name))
	}
	return de, 0
}

// Seekdir moves to the entry after offset off.
func (s *snapshotStream) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	s.pos = int(min(off, uint64(len(s.td.entries))))
	return 0
}

// Lookup answers READDIRPLUS: attributes for subdirectories; for a data
// file once a file of the directory was looked up (the kernel asks for
// READDIRPLUS past a directory's first chunk only when its entries are
// being stat-ed: ls -l) and when the file's served size is known without
// reading anything (decided by the warm-up that first lookup started).
// Such a file is looked up here, as its stat would look it up a moment
// later, one round trip per file fewer; any other gets no attributes
// (see the type's comment).
func (s *snapshotStream) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	e, ok := s.td.lookup(name)
	switch {
	case !ok:
		return nil, syscall.ENOENT
	case e.add == nil:
		return s.dir.Lookup(ctx, name, out)
	case s.td.warmed.Load():
		return s.dir.lookupKnown(ctx, name, e.add, out)
	}
	return nil, syscall.ENOENT
}
