package nodes

import (
	"context"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// RootDir is the mount point: one TableDir per mounted table, fixed at
// mount time (go-fuse serves lookups and listings from its children).
type RootDir struct {
	fs.Inode
	readOnlyDir

	tables []*TableDir
	status *StatusFile // set by EnableStatus; nil: no status file
}

var (
	_ = (fs.NodeOnAdder)((*RootDir)(nil))
	_ = (fs.NodeGetattrer)((*RootDir)(nil))
)

// NewRoot returns the root holding tables, which must have distinct names.
func NewRoot(tables []*TableDir) *RootDir {
	r := &RootDir{tables: tables}
	if len(tables) > 0 { // the tables share the mount's Env
		r.ro = roNode{tables[0].env, &r.Inode}
	}
	return r
}

// OnAdd attaches the table directories.
func (r *RootDir) OnAdd(ctx context.Context) {
	for _, t := range r.tables {
		ch := r.NewPersistentInode(ctx, t, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: t.Ino()})
		r.AddChild(t.name, ch, false)
	}
	if r.status != nil {
		ch := r.NewPersistentInode(ctx, r.status, fs.StableAttr{Mode: syscall.S_IFREG, Ino: StableIno(kindStatus, "", 0, "")})
		r.AddChild(StatusName, ch, false)
	}
}

// Getattr reports a read-only directory.
func (r *RootDir) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	acc := r.ro.env.mountAccess()
	FillAttr(&out.Attr, 1, acc.Dir(), acc.Owner, 0, time.Time{})
	return 0
}
