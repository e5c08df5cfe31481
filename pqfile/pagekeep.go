package pqfile

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/parquet-go/parquet-go/encoding/delta"
	"github.com/parquet-go/parquet-go/format"
)

// keepValues appends to dst the encoded values of the page's runs of kept non-null values
// (nonNull of them), in the page's encoding: PLAIN of any physical type, dictionary indexes with
// the page's bit width, or DELTA_LENGTH_BYTE_ARRAY (parquet-go's default for byte arrays). Other
// encodings go to parquet-go.
func (f *columnFilter) keepValues(off int64, dst []byte, pd *pageData, runs []run, nonNull int) ([]byte, error) {
	// The kept values take about as many bytes as the page's values at most: room for them at
	// once, not the doublings of append (each new memory, faulted in page by page the first time).
	dst = slices.Grow(dst, len(pd.values)+64)
	switch pd.enc {
	case format.Plain:
		switch f.leaf.typ {
		case format.Boolean:
			return f.keepBits(off, dst, pd, runs)
		case format.ByteArray:
			return f.keepByteArrays(off, dst, pd, runs)
		}
		return f.keepFixed(off, dst, pd, runs)
	case legacyDictionary, format.RLEDictionary: // PLAIN_DICTIONARY, deprecated, still in v1 pages
		if f.leaf.typ != format.Boolean {
			return f.keepIndexes(off, dst, pd, runs, nonNull)
		}
	case format.DeltaLengthByteArray:
		if f.leaf.typ == format.ByteArray {
			return f.keepDeltaLengths(off, dst, pd, runs)
		}
	}
	return nil, f.unsupported("%v %v values", pd.enc, f.leaf.typ)
}

// checkValuesLen checks that the values section holds exactly need bytes: fewer is corrupt, more
// (padding parquet-go might accept) goes to parquet-go.
func (f *columnFilter) checkValuesLen(off int64, pd *pageData, need int) error {
	switch {
	case len(pd.values) < need:
		return f.corrupt(off, "%d values need %d bytes, page has %d", pd.nonNull, need, len(pd.values))
	case len(pd.values) > need:
		return f.unsupported("%d bytes after the values of a page", len(pd.values)-need)
	}
	return nil
}

// keepFixed keeps PLAIN values of a fixed width: one copy per run.
func (f *columnFilter) keepFixed(off int64, dst []byte, pd *pageData, runs []run) ([]byte, error) {
	w := f.leaf.width
	if err := f.checkValuesLen(off, pd, pd.nonNull*w); err != nil {
		return nil, err
	}
	for _, r := range runs {
		dst = append(dst, pd.values[r.lo*w:r.hi*w]...)
	}
	return dst, nil
}

// keepByteArrays keeps PLAIN byte arrays (4-byte little-endian length, then the bytes): it finds
// where each value starts, then copies once per run.
func (f *columnFilter) keepByteArrays(off int64, dst []byte, pd *pageData, runs []run) ([]byte, error) {
	offs := f.s.offs[:0]
	vals := pd.values
	p := 0
	for range pd.nonNull {
		if len(vals)-p < 4 || int64(binary.LittleEndian.Uint32(vals[p:])) > int64(len(vals)-p-4) {
			return nil, f.corrupt(off, "byte array value %d overruns the page", len(offs))
		}
		offs = append(offs, p)
		p += 4 + int(binary.LittleEndian.Uint32(vals[p:]))
	}
	offs = append(offs, p)
	f.s.offs = offs
	if err := f.checkValuesLen(off, pd, p); err != nil {
		return nil, err
	}
	for _, r := range runs {
		dst = append(dst, vals[offs[r.lo]:offs[r.hi]]...)
	}
	return dst, nil
}

// keepBits keeps PLAIN booleans, bit-packed LSB first.
func (f *columnFilter) keepBits(off int64, dst []byte, pd *pageData, runs []run) ([]byte, error) {
	if err := f.checkValuesLen(off, pd, (pd.nonNull+7)/8); err != nil {
		return nil, err
	}
	var cur byte
	var nb uint
	for _, r := range runs {
		for i := r.lo; i < r.hi; i++ {
			cur |= (pd.values[i>>3] >> (i & 7) & 1) << nb
			if nb++; nb == 8 {
				dst, cur, nb = append(dst, cur), 0, 0
			}
		}
	}
	if nb > 0 {
		dst = append(dst, cur)
	}
	return dst, nil
}

// keepIndexes keeps dictionary indexes: a bit width byte, then the hybrid-encoded indexes, which
// must point into the chunk's dictionary. The kept indexes are encoded with the same width.
func (f *columnFilter) keepIndexes(off int64, dst []byte, pd *pageData, runs []run, kept int) ([]byte, error) {
	if f.dictN < 0 {
		return nil, f.corrupt(off, "dictionary-encoded page without a dictionary page")
	}
	if len(pd.values) == 0 {
		if pd.nonNull > 0 {
			return nil, f.corrupt(off, "no dictionary indexes for %d values", pd.nonNull)
		}
		return dst, nil
	}
	width := uint(pd.values[0])
	idx, err := decodeHybrid(f.s.idx[:0], pd.values[1:], width, pd.nonNull)
	f.s.idx = idx
	if err != nil || width > 32 {
		return nil, f.corrupt(off, "dictionary indexes of width %d: %v", width, err)
	}
	keep := f.s.keepIdx[:0]
	for _, r := range runs {
		keep = append(keep, idx[r.lo:r.hi]...)
	}
	f.s.keepIdx = keep
	for _, i := range keep {
		if i < 0 || int64(i) >= f.dictN {
			return nil, f.corrupt(off, "dictionary index %d of %d entries", i, f.dictN)
		}
	}
	if kept != len(keep) {
		return nil, f.corrupt(off, "kept %d indexes for %d values", len(keep), kept)
	}
	dst = append(dst, byte(width))
	dst, f.s.lv, err = appendIndexes(dst, f.s.lv, keep, width)
	if err != nil {
		return nil, f.corrupt(off, "encode dictionary indexes: %v", err)
	}
	return dst, nil
}

// keepDeltaLengths keeps DELTA_LENGTH_BYTE_ARRAY values: the lengths (DELTA_BINARY_PACKED),
// then the bytes of every value. The lengths' header must count exactly the page's non-null
// values before parquet-go decodes them (it allocates what the header claims); the kept lengths
// are encoded again by parquet-go, the kept bytes copied once per run.
func (f *columnFilter) keepDeltaLengths(off int64, dst []byte, pd *pageData, runs []run) ([]byte, error) {
	size, err := deltaSize(pd.values, pd.nonNull)
	if err != nil {
		return nil, f.corrupt(off, "DELTA_LENGTH_BYTE_ARRAY lengths: %v", err)
	}
	var codec delta.BinaryPackedEncoding
	lens, err := codec.DecodeInt32(f.s.idx[:0], pd.values[:size])
	f.s.idx = lens
	if err != nil || len(lens) != pd.nonNull {
		return nil, f.corrupt(off, "DELTA_LENGTH_BYTE_ARRAY lengths: %d of %d: %v", len(lens), pd.nonNull, err)
	}
	vals := pd.values[size:]
	offs := append(f.s.offs[:0], 0)
	for _, l := range lens {
		if l < 0 || int64(l) > int64(len(vals)-offs[len(offs)-1]) {
			return nil, f.corrupt(off, "byte array value %d overruns the page", len(offs)-1)
		}
		offs = append(offs, offs[len(offs)-1]+int(l))
	}
	f.s.offs = offs
	if extra := len(vals) - offs[len(offs)-1]; extra != 0 {
		return nil, f.unsupported("%d bytes after the values of a page", extra)
	}
	keep := f.s.keepIdx[:0]
	for _, r := range runs {
		keep = append(keep, lens[r.lo:r.hi]...)
	}
	f.s.keepIdx = keep
	if f.s.lv, err = codec.EncodeInt32(f.s.lv[:0], keep); err != nil {
		return nil, f.corrupt(off, "encode DELTA_LENGTH_BYTE_ARRAY lengths: %v", err)
	}
	dst = append(dst, f.s.lv...)
	for _, r := range runs {
		dst = append(dst, vals[offs[r.lo]:offs[r.hi]]...)
	}
	return dst, nil
}

// deltaSize returns the size of the DELTA_BINARY_PACKED data at the start of b, which must hold n
// values, checking its header first: a block size that is a positive multiple of 128, miniblocks
// of a multiple of 32 values. Miniblocks after the last value have a bit width but no bytes.
func deltaSize(b []byte, n int) (int, error) {
	c := cursor{b: b}
	block, minis, total := c.uvarint(), c.uvarint(), c.uvarint()
	c.varint() // the first value
	if c.bad {
		return 0, errHybrid
	}
	if block == 0 || block%128 != 0 || block > 1<<20 || minis == 0 || block%minis != 0 || (block/minis)%32 != 0 {
		return 0, fmt.Errorf("block of %d values in %d miniblocks", block, minis)
	}
	if total != uint64(n) {
		return 0, fmt.Errorf("%d values, page has %d", total, n)
	}
	perMini := int(block / minis)
	for left := n - 1; left > 0 && !c.bad; {
		c.varint() // the block's min delta
		for _, w := range c.take(int(minis)) {
			if left <= 0 {
				break
			}
			if w > 32 {
				return 0, errHybrid
			}
			c.take(perMini * int(w) / 8)
			left -= perMini
		}
	}
	if c.bad {
		return 0, errHybrid
	}
	return c.p, nil
}

// cursor reads varints and byte runs from b; once a read fails, bad is set and reads return zero.
type cursor struct {
	b   []byte
	p   int
	bad bool
}

func (c *cursor) uvarint() uint64 {
	v, k := binary.Uvarint(c.b[c.p:])
	if c.bad || k <= 0 {
		c.bad = true
		return 0
	}
	c.p += k
	return v
}

func (c *cursor) varint() {
	if _, k := binary.Varint(c.b[c.p:]); c.bad || k <= 0 {
		c.bad = true
	} else {
		c.p += k
	}
}

func (c *cursor) take(n int) []byte {
	if c.bad || len(c.b)-c.p < n {
		c.bad = true
		return nil
	}
	c.p += n
	return c.b[c.p-n : c.p]
}
