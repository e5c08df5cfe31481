package fs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/pqfile"
	"github.com/deltafs/deltafs/nodes"
)

// A composite cache entry holds what a rewritten file does not share with
// its stored file, and how to put the two together:
//
//	patch | layout | u32 layout length | u64 patch length | "DFSP"
//
// The patch is pqfile's (re-encoded column chunks and the new footer), the
// layout pqfile's marshalled segments (little-endian integers). The disk
// cache (blobcache.DerivedChecked) guards the entry's integrity: it is
// written without fsync and checked against a CRC before a new process
// serves it.
const (
	entryMagic      = "DFSP"
	entryTrailerLen = 4 + 8 + len(entryMagic)
	maxLayoutLen    = 64 << 20
)

// errBadEntry reports a cache entry that is not one writeEntry wrote.
var errBadEntry = errors.New("malformed composite cache entry")

// writeEntry writes the cache entry of plan's output to w.
func writeEntry(w io.Writer, plan *pqfile.Plan) error {
	l, err := plan.WriteLayout(w)
	if err != nil {
		return err
	}
	table, err := l.MarshalBinary()
	if err != nil {
		return err
	}
	tail := binary.LittleEndian.AppendUint32(table, uint32(len(table)))
	tail = binary.LittleEndian.AppendUint64(tail, uint64(l.PatchSize()))
	_, err = w.Write(append(tail, entryMagic...))
	return err
}

// readEntry reads the layout of a cache entry of size bytes, for a stored
// file of srcSize bytes. A malformed entry is errBadEntry.
func readEntry(r io.ReaderAt, size, srcSize int64) (*pqfile.Layout, error) {
	var tr [entryTrailerLen]byte
	if size < int64(len(tr)) {
		return nil, fmt.Errorf("%w: %d bytes", errBadEntry, size)
	}
	if _, err := r.ReadAt(tr[:], size-int64(len(tr))); err != nil {
		return nil, fmt.Errorf("read cache entry trailer: %w", err)
	}
	tableLen := int64(binary.LittleEndian.Uint32(tr[0:]))
	patchLen := binary.LittleEndian.Uint64(tr[4:])
	if string(tr[12:]) != entryMagic || tableLen > maxLayoutLen || patchLen > uint64(size) ||
		int64(patchLen)+tableLen+int64(len(tr)) != size {
		return nil, fmt.Errorf("%w: bad trailer", errBadEntry)
	}
	table := make([]byte, tableLen)
	if _, err := r.ReadAt(table, int64(patchLen)); err != nil {
		return nil, fmt.Errorf("read cache entry layout: %w", err)
	}
	l, err := pqfile.UnmarshalLayout(table, srcSize, int64(patchLen))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadEntry, err)
	}
	return l, nil
}

// compositeContent serves a rewritten file from its layout: ranges of the
// stored file through the same reader as the stored file's own content,
// the rest from the cache entry. It has no local file: the kernel cannot
// pass it through.
type compositeContent struct {
	layout *pqfile.Layout
	src    nodes.Content       // the stored file
	entry  *blobcache.DiskFile // the patch is at its start
}

var _ nodes.Content = (*compositeContent)(nil)

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
	c   nodes.Content
}

func (r ctxReaderAt) ReadAt(p []byte, off int64) (int, error) { return r.c.ReadAt(r.ctx, p, off) }
