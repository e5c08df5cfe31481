package serve

// compositeContent: a rewritten file served from its layout, ranges of
// the stored file and of its patch in the disk cache.

import (
	"context"
	"io"
	"os"

	"github.com/deltafs/deltafs/pqfile"
)

// compositeContent serves a rewritten file from its layout: ranges of the
// stored file through the same reader as the stored file's own content,
// the rest from the cache entry. It has no local file: the kernel cannot
// pass it through.
type compositeContent struct {
	layout *pqfile.Layout
	src    Content     // the stored file
	entry  patchReader // the patch: a disk cache entry (at its start) or memory
}

var _ Content = (*compositeContent)(nil)

func (c *compositeContent) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return c.layout.ReadAt(p, off, ctxReaderAt{ctx, c.src}, c.entry)
}

func (c *compositeContent) Size() int64    { return c.layout.Size() }
func (c *compositeContent) File() *os.File { return nil }

func (c *compositeContent) Close() error {
	err := c.src.Close()
	if cerr := c.entry.Close(); err == nil {
		err = cerr
	}
	return err
}

// ctxReaderAt reads a Content with the context of the read being served.
type ctxReaderAt struct {
	ctx context.Context
	c   Content
}

func (r ctxReaderAt) ReadAt(p []byte, off int64) (int, error) { return r.c.ReadAt(r.ctx, p, off) }

// ReaderAt adapts c to io.ReaderAt, every read under ctx.
func ReaderAt(ctx context.Context, c Content) io.ReaderAt { return ctxReaderAt{ctx, c} }
