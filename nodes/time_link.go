package nodes

import (
	"context"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// TimeLink is <table>/@<timestamp>, resolved on lookup (never listed): a
// symlink to the @vK that was the table's state at that time.
type TimeLink struct {
	fs.Inode
	ReadOnlyFile

	target string     // "@vK"
	ino    uint64     // its stable number
	owner  fuse.Owner // its table's entries' owner
}

var _ = (fs.NodeReadlinker)((*TimeLink)(nil))

// Readlink returns "@vK".
func (l *TimeLink) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	return []byte(l.target), 0
}

var _ = (fs.NodeGetattrer)((*TimeLink)(nil))

// Getattr reports a symlink owned as its table's entries are.
func (l *TimeLink) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	FillAttr(&out.Attr, l.ino, modeSymlink, l.owner, int64(len(l.target)), time.Time{})
	return 0
}
