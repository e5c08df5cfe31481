package nodes

import (
	"context"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// textFile is a read-only file of fixed text.
type textFile struct {
	fs.Inode
	ReadOnlyFile

	text []byte
	ino  uint64
	acc  Access
}

var (
	_ = (fs.NodeGetattrer)((*textFile)(nil))
	_ = (fs.NodeOpener)((*textFile)(nil))
)

func (f *textFile) fill(a *fuse.Attr) {
	FillAttr(a, f.ino, f.acc.File(), f.acc.Owner, int64(len(f.text)), time.Time{})
}

// Getattr reports the text's size.
func (f *textFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.fill(&out.Attr)
	return 0
}

// Open returns the text.
func (f *textFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if IsWriteOpen(flags) {
		return nil, 0, f.ro.refuse("open for writing", "")
	}
	return BytesHandle(f.text), fuse.FOPEN_KEEP_CACHE, 0
}
