package pqfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A layout entry is the serialized form of a rewrite's output for a cache:
// what the rewritten file does not share with its stored file, and how to
// put the two together:
//
//	patch | layout | u32 layout length | u64 patch length | "DFSP"
//
// The patch holds the re-encoded column chunks and the new footer, the
// layout the marshalled segments (little-endian integers). The disk
// cache (blobcache.DerivedChecked, in deltafs) guards the entry's integrity: it is
// written without fsync and checked against a CRC before a new process
// serves it.
const (
	entryMagic      = "DFSP"
	entryTrailerLen = 4 + 8 + len(entryMagic)
	maxLayoutLen    = 64 << 20
)

// ErrBadEntry reports an entry that is not one WriteEntry wrote.
var ErrBadEntry = errors.New("malformed composite cache entry")

// WriteEntry writes the layout entry of plan's output to w: the patch
// first, so that a Layout read back with ReadEntry reads it at offset 0.
func WriteEntry(w io.Writer, plan *Plan) error {
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

// ReadEntry reads the layout of an entry of size bytes, for a stored file
// of srcSize bytes. A malformed entry is ErrBadEntry.
func ReadEntry(r io.ReaderAt, size, srcSize int64) (*Layout, error) {
	var tr [entryTrailerLen]byte
	if size < int64(len(tr)) {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadEntry, size)
	}
	if _, err := r.ReadAt(tr[:], size-int64(len(tr))); err != nil {
		return nil, fmt.Errorf("read cache entry trailer: %w", err)
	}
	tableLen := int64(binary.LittleEndian.Uint32(tr[0:]))
	patchLen := binary.LittleEndian.Uint64(tr[4:])
	if string(tr[12:]) != entryMagic || tableLen > maxLayoutLen || patchLen > uint64(size) ||
		int64(patchLen)+tableLen+int64(len(tr)) != size {
		return nil, fmt.Errorf("%w: bad trailer", ErrBadEntry)
	}
	table := make([]byte, tableLen)
	if _, err := r.ReadAt(table, int64(patchLen)); err != nil {
		return nil, fmt.Errorf("read cache entry layout: %w", err)
	}
	l, err := UnmarshalLayout(table, srcSize, int64(patchLen))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadEntry, err)
	}
	return l, nil
}
