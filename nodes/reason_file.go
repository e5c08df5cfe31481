package nodes

import (
	"context"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// ReasonFile is <table>/_deltafs_error.txt of a refused table: one line
// saying why deltafs cannot serve it (the engine's error, naming the
// table and the feature or the corrupt object).
type ReasonFile struct {
	fs.Inode
	ReadOnlyFile

	dir *TableDir
}

var (
	_ = (fs.NodeGetattrer)((*ReasonFile)(nil))
	_ = (fs.NodeOpener)((*ReasonFile)(nil))
)

// text is the file's content; empty once the table became readable.
func (r *ReasonFile) text() []byte {
	err := r.dir.Err()
	if err == nil {
		return nil
	}
	return []byte("deltafs cannot serve table " + r.dir.name + ": " + err.Error() + "\n")
}

// Getattr reports a read-only file of the reason's size.
func (r *ReasonFile) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	acc := r.dir.access()
	FillAttr(&out.Attr, StableIno(kindReason, r.dir.name, 0, ""), acc.File(), acc.Owner, int64(len(r.text())), time.Time{})
	out.SetTimeout(r.dir.env.Opts.ShortTimeout)
	return 0
}

// Open returns the reason as of now.
func (r *ReasonFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if IsWriteOpen(flags) {
		return nil, 0, r.ro.refuse("open for writing", "")
	}
	return BytesHandle(r.text()), fuse.FOPEN_DIRECT_IO, 0
}
