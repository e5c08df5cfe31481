package fs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta/pqfile"
	"github.com/deltafs/deltafs/nodes"
)

// A composite cache entry holds what a rewritten file does not share with
// its stored file, and how to put the two together:
//
//	patch | layout | u32 layout length | u64 patch length | u32 CRC-32C | "DFSP"
//
// The patch is pqfile's (re-encoded column chunks and the new footer), the
// layout pqfile's marshalled segments; the CRC covers every byte before it
// (little-endian integers). Entries are written without fsync, so one found
// on disk by a new process is checked against its CRC before it is served.
const (
	entryMagic      = "DFSP"
	entryTrailerLen = 4 + 8 + 4 + len(entryMagic)
	maxLayoutLen    = 64 << 20
)

// errTornEntry reports a cache entry that is not what its build wrote
// (a crash before the kernel flushed it, or damage on disk).
var errTornEntry = errors.New("torn composite cache entry")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// writeEntry writes the cache entry of plan's output to w.
func writeEntry(w io.Writer, plan *pqfile.Plan) error {
	h := crc32.New(castagnoli)
	mw := io.MultiWriter(w, h)
	l, err := plan.WriteLayout(mw)
	if err != nil {
		return err
	}
	table, err := l.MarshalBinary()
	if err != nil {
		return err
	}
	tail := binary.LittleEndian.AppendUint32(table, uint32(len(table)))
	tail = binary.LittleEndian.AppendUint64(tail, uint64(l.PatchSize()))
	if _, err := mw.Write(tail); err != nil {
		return err
	}
	sum := binary.LittleEndian.AppendUint32(nil, h.Sum32())
	_, err = w.Write(append(sum, entryMagic...))
	return err
}

// readEntry reads the layout of a cache entry of size bytes, for a stored
// file of srcSize bytes, and the entry's CRC. A malformed entry is
// errTornEntry.
func readEntry(r io.ReaderAt, size, srcSize int64) (*pqfile.Layout, uint32, error) {
	var tr [entryTrailerLen]byte
	if size < int64(len(tr)) {
		return nil, 0, fmt.Errorf("%w: %d bytes", errTornEntry, size)
	}
	if _, err := r.ReadAt(tr[:], size-int64(len(tr))); err != nil {
		return nil, 0, fmt.Errorf("read cache entry trailer: %w", err)
	}
	tableLen := int64(binary.LittleEndian.Uint32(tr[0:]))
	patchLen := binary.LittleEndian.Uint64(tr[4:])
	crc := binary.LittleEndian.Uint32(tr[12:])
	if string(tr[16:]) != entryMagic || tableLen > maxLayoutLen || patchLen > uint64(size) ||
		int64(patchLen)+tableLen+int64(len(tr)) != size {
		return nil, 0, fmt.Errorf("%w: bad trailer", errTornEntry)
	}
	table := make([]byte, tableLen)
	if _, err := r.ReadAt(table, int64(patchLen)); err != nil {
		return nil, 0, fmt.Errorf("read cache entry layout: %w", err)
	}
	l, err := pqfile.UnmarshalLayout(table, srcSize, int64(patchLen))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errTornEntry, err)
	}
	return l, crc, nil
}

// checkEntry compares the CRC of the first size-8 bytes of a cache entry
// (everything before the CRC) with want.
func checkEntry(r io.ReaderAt, size int64, want uint32) error {
	h := crc32.New(castagnoli)
	n := size - 4 - int64(len(entryMagic))
	if _, err := io.CopyBuffer(h, io.NewSectionReader(r, 0, n), make([]byte, 1<<20)); err != nil {
		return fmt.Errorf("check cache entry: %w", err)
	}
	if h.Sum32() != want {
		return fmt.Errorf("%w: CRC mismatch", errTornEntry)
	}
	return nil
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
