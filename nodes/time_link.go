package nodes

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
)

// TimeLink is <table>/@<timestamp>, resolved on lookup (never listed): a
// symlink to the @vK that was the table's state at that time.
type TimeLink struct {
	fs.Inode
	readOnlyFile

	target string // "@vK"
}

var _ = (fs.NodeReadlinker)((*TimeLink)(nil))

// Readlink returns "@vK".
func (l *TimeLink) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	return []byte(l.target), 0
}
