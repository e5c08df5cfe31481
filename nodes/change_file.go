package nodes

import (
	"context"
	"errors"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/serve"
)

// ChangeFileNode is one Parquet file of a range of changes
// (ChangeRangeDir): a data or CDC file's change rows, served rewritten by
// the table's Files (OpenChange). Its bytes never change: the kernel may
// keep them cached. It holds its change file and rows, not the range's
// end snapshot, which the snapshot cache keeps (or builds again) and is
// asked for on use.
type ChangeFileNode struct {
	fs.Inode
	ReadOnlyFile

	dir  *TableDir
	to   int64 // the range's end version
	cf   delta.ChangeFile
	name string
	ino  uint64

	mu         sync.Mutex
	rowsKnown  bool              // guarded by mu
	keep, drop *roaring64.Bitmap // guarded by mu: the file's change rows
}

var (
	_ = (fs.NodeGetattrer)((*ChangeFileNode)(nil))
	_ = (fs.NodeOpener)((*ChangeFileNode)(nil))
)

// rows returns the file's change rows (its deletion vectors read once
// they are read whole; mu is not held while they are read).
func (c *ChangeFileNode) rows(ctx context.Context) (keep, drop *roaring64.Bitmap, err error) {
	c.mu.Lock()
	known, keep, drop := c.rowsKnown, c.keep, c.drop
	c.mu.Unlock()
	if known {
		return keep, drop, nil
	}
	if keep, drop, err = c.dir.table.Rows(ctx, c.cf); err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.rowsKnown {
		c.keep, c.drop, c.rowsKnown = keep, drop, true
	}
	return c.keep, c.drop, nil
}

// sized returns the range's end snapshot and the file's change rows:
// what serving it needs.
func (c *ChangeFileNode) sized(ctx context.Context) (end *delta.Snapshot, keep, drop *roaring64.Bitmap, err error) {
	if end, err = c.dir.table.Snapshot(ctx, c.to); err != nil {
		return nil, nil, nil, err
	}
	keep, drop, err = c.rows(ctx)
	return end, keep, drop, err
}

func (c *ChangeFileNode) attrs() []any {
	return []any{"table", c.dir.name, "version", c.cf.Version, "file", c.cf.Key, "name", c.name}
}

// fill reports a read-only file of the served size and returns the
// kernel timeout. When the size cannot be had (the file vacuumed, a
// corrupt deletion vector), stat reports the stored size with a short
// timeout and the failure is the open's, as for a data file (statSize):
// a failed stat makes a glob skip the file silently.
func (c *ChangeFileNode) fill(ctx context.Context, a *fuse.Attr) (time.Duration, syscall.Errno) {
	end, keep, drop, err := c.sized(ctx)
	var n int64
	if err == nil {
		n, err = c.dir.files.ChangeSize(ctx, end, c.cf, keep, drop)
	}
	timeout := c.dir.env.Opts.LongTimeout
	if err != nil {
		if errno := statErrno(err); errno != 0 {
			return 0, errno
		}
		n, timeout = c.cf.Size, c.dir.env.Opts.ShortTimeout
	}
	acc := c.dir.access()
	FillAttr(a, c.ino, acc.File(), acc.Owner, n, c.cf.Timestamp)
	return timeout, 0
}

// Getattr reports the served size.
func (c *ChangeFileNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	timeout, errno := c.fill(ctx, &out.Attr)
	if errno != 0 {
		return errno
	}
	out.SetTimeout(timeout)
	return 0
}

// Open serves the change rows.
func (c *ChangeFileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if IsWriteOpen(flags) {
		return nil, 0, c.ro.refuse("open for writing", "")
	}
	end, keep, drop, err := c.sized(ctx)
	var content serve.Content
	if err == nil {
		content, err = c.dir.files.OpenChange(ctx, end, c.cf, keep, drop)
	}
	if err != nil {
		return nil, 0, c.dir.env.DataErrno("open a change file", err, c.attrs()...)
	}
	return &changeHandle{file: c, content: content}, fuse.FOPEN_KEEP_CACHE, 0
}

// changeHandle is an open ChangeFileNode.
type changeHandle struct {
	file    *ChangeFileNode
	content serve.Content
}

var (
	_ = (fs.FileReader)((*changeHandle)(nil))
	_ = (fs.FileReleaser)((*changeHandle)(nil))
)

// Read returns the bytes at off; a short result only at the end of file.
func (h *changeHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.content.ReadAt(ctx, dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, h.file.dir.env.DataErrno("read a change file", err, h.file.attrs()...)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Release closes the content.
func (h *changeHandle) Release(ctx context.Context) syscall.Errno {
	h.content.Close()
	return 0
}
