package nodes

import (
	"context"
	"errors"
	"io"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/serve"
)

// dataHandle is an open DataFile. When the content has a local file and
// passthrough is allowed, the kernel reads that file directly and Read is
// never called; otherwise Read serves the content in userspace.
type dataHandle struct {
	file        *DataFile
	content     serve.Content
	passthrough bool
}

var (
	_ = (fs.FilePassthroughFder)((*dataHandle)(nil))
	_ = (fs.FileReader)((*dataHandle)(nil))
	_ = (fs.FileReleaser)((*dataHandle)(nil))
)

// passthroughMin is the smallest file handed to kernel passthrough. Each
// passthrough open registers a backing file with the kernel and releases it
// at close, which costs more than serving a small file from the page cache
// through FOPEN_KEEP_CACHE (docs/benchmarks.md, small opens).
const passthroughMin = 1 << 20

// PassthroughFd offers the local file to the kernel (called once per open
// by go-fuse; if the kernel refuses, reads fall back to Read).
func (h *dataHandle) PassthroughFd() (int, bool) {
	if !h.passthrough || h.content.Size() < passthroughMin {
		return 0, false
	}
	f := h.content.File()
	if f == nil {
		return 0, false
	}
	return int(f.Fd()), true
}

// sliceReader is a Content that can lend its bytes instead of copying
// them into the request buffer (a remote object whose blocks are in
// memory). The slices must stay unchanged while the reply is written.
type sliceReader interface {
	ReadSlices(ctx context.Context, off int64, n int) ([][]byte, error)
}

// Read returns the bytes at off; a short result only at the end of file.
func (h *dataHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if sr, ok := h.content.(sliceReader); ok {
		bufs, err := sr.ReadSlices(ctx, off, len(dest))
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, h.file.fail("read", err)
		}
		return fuse.ReadResultVector(bufs), 0
	}
	n, err := h.content.ReadAt(ctx, dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, h.file.fail("read", err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Release closes the content.
func (h *dataHandle) Release(ctx context.Context) syscall.Errno {
	h.content.Close()
	return 0
}
