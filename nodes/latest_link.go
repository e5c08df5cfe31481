package nodes

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/delta"
)

// LatestLink is <table>/@latest, a symlink to @vN for the newest version
// the table directory knows. It moves when TableDir.Refresh sees a new
// commit; its entry and attributes have short kernel timeouts, and
// TableDir.Invalidate drops them at once.
type LatestLink struct {
	fs.Inode
	ReadOnlyFile

	dir *TableDir
}

var (
	_ = (fs.NodeReadlinker)((*LatestLink)(nil))
	_ = (fs.NodeGetattrer)((*LatestLink)(nil))
)

func (l *LatestLink) ino() uint64 { return StableIno(kindLatest, l.dir.name, 0, "") }

func (l *LatestLink) fill(a *fuse.Attr, latest *delta.Snapshot) {
	FillAttr(a, l.ino(), modeSymlink, l.dir.access().Owner, int64(len(versionName(latest.Version()))), latest.Timestamp())
}

// Readlink returns "@vN".
func (l *LatestLink) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	latest, err := l.dir.current(ctx)
	if latest == nil {
		return nil, refusedErrno(err)
	}
	return []byte(versionName(latest.Version())), 0
}

// Getattr reports a symlink stamped with the newest commit time.
func (l *LatestLink) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	latest, err := l.dir.current(ctx)
	if latest == nil {
		return refusedErrno(err)
	}
	l.fill(&out.Attr, latest)
	out.SetTimeout(l.dir.env.Opts.ShortTimeout)
	return 0
}
