package pqfile

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// values decodes the present values of the page from its values section
// b. PLAIN and dictionary indexes are decoded here without copying the
// values; the DELTA_* and BYTE_STREAM_SPLIT encodings by parquet-go's
// decoders, after their headers are checked against the page's value
// count (they allocate what their headers say), and into at most room
// bytes (else needMore).
func (p *prover) values(b []byte, enc format.Encoding, nv int, room int64) error {
	k := p.nonNull()
	pg := &p.page
	switch enc {
	case format.Plain:
		return p.plain(&pg.vals, b, k, &p.spans)
	//lint:ignore SA1019 Parquet 1.0 writers encode dictionary indexes PLAIN_DICTIONARY: still read
	case format.PlainDictionary, format.RLEDictionary:
		if !p.dictOK {
			return corruptf("dictionary-encoded page without a dictionary page")
		}
		if p.idx == nil {
			p.idx = make([]int32, 0, 1)
		}
		pg.idx, pg.dict = p.idx[:0], &p.dict
		if k == 0 {
			return nil
		}
		if len(b) < 1 || b[0] > 32 {
			return corruptf("bad dictionary index width")
		}
		idx, err := decodeHybrid(p.idx[:0], b[1:], uint(b[0]), k)
		p.idx = idx
		if err != nil {
			return corruptf("dictionary indexes: %v", err)
		}
		for _, x := range idx {
			if uint32(x) >= uint32(p.dict.n) {
				return corruptf("dictionary index %d, the dictionary holds %d values", x, p.dict.n)
			}
		}
		pg.idx = idx
		return nil
	case format.RLE:
		if p.leaf.typ != format.Boolean {
			return corruptf("RLE values in a %v column", p.leaf.typ)
		}
		if len(b) < 4 || int64(binary.LittleEndian.Uint32(b)) > int64(len(b)-4) {
			return corruptf("RLE booleans overrun the page")
		}
		bools, err := decodeHybrid(p.bools[:0], b[4:4+binary.LittleEndian.Uint32(b)], 1, k)
		p.bools = bools
		if err != nil {
			return corruptf("RLE booleans: %v", err)
		}
		pg.vals = pageVals{n: k, width: 1, fixed: bools}
		return nil
	case format.DeltaBinaryPacked, format.DeltaLengthByteArray, format.DeltaByteArray, format.ByteStreamSplit:
		return p.viaParquetGo(b, enc, k, nv, room)
	}
	return fmt.Errorf("%w: %v values", ErrUnsupported, enc)
}

// deltaCount reads the total value count of a DELTA_BINARY_PACKED header
// at the start of b.
func deltaCount(b []byte) (uint64, error) {
	pos := 0
	var v uint64
	for range 3 { // block size, miniblocks per block, total count
		x, n := binary.Uvarint(b[pos:])
		if n <= 0 {
			return 0, corruptf("bad DELTA_BINARY_PACKED header")
		}
		v, pos = x, pos+n
	}
	return v, nil
}

func (p *prover) viaParquetGo(b []byte, enc format.Encoding, k, nv int, room int64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = corruptf("%v values: decoder panicked: %v", enc, r)
		}
	}()
	l := p.leaf
	if enc != format.ByteStreamSplit {
		if n, err := deltaCount(b); err != nil || n > uint64(nv) {
			return corruptf("%v header declares %d values, the page %d", enc, n, nv)
		}
	}
	e := parquet.LookupEncoding(enc)
	pg := &p.page
	if l.width == 0 || (enc == format.DeltaByteArray && l.typ == format.FixedLenByteArray) {
		if enc == format.DeltaByteArray {
			if est := int64(e.EstimateDecodeByteArraySize(b)); est > room {
				return needMore(est - room)
			}
		}
		if l.typ == format.FixedLenByteArray {
			data, err := e.DecodeFixedLenByteArray(p.decoded[:0], b, l.width)
			p.decoded = data
			if err != nil || len(data) < k*l.width {
				return corruptf("%v values: %d bytes for %d values: %v", enc, len(data), k, err)
			}
			pg.vals = pageVals{n: k, width: l.width, fixed: data[:k*l.width]}
			return nil
		}
		data, offs, err := e.DecodeByteArray(p.decoded[:0], b, p.offs[:0])
		p.decoded, p.offs = data, offs
		if err != nil || len(offs) < k+1 {
			return corruptf("%v values: %d for %d: %v", enc, max(len(offs)-1, 0), k, err)
		}
		p.spans = growExact(p.spans, 2*k)
		for i := range k {
			p.spans[2*i], p.spans[2*i+1] = offs[i], offs[i+1]
		}
		pg.vals = pageVals{n: k, data: data, spans: p.spans}
		return nil
	}
	var raw []byte
	switch l.typ {
	case format.Int32:
		v, err2 := e.DecodeInt32(p.i32[:0], b)
		p.i32, raw, err = v, asBytes(v), err2
	case format.Int64:
		v, err2 := e.DecodeInt64(p.i64[:0], b)
		p.i64, raw, err = v, asBytes(v), err2
	case format.Float:
		v, err2 := e.DecodeFloat(p.f32[:0], b)
		p.f32, raw, err = v, asBytes(v), err2
	case format.Double:
		v, err2 := e.DecodeDouble(p.f64[:0], b)
		p.f64, raw, err = v, asBytes(v), err2
	default:
		return corruptf("%v values in a %v column", enc, l.typ)
	}
	if err != nil || len(raw) < k*l.width {
		return corruptf("%v values: %d bytes for %d values: %v", enc, len(raw), k, err)
	}
	pg.vals = pageVals{n: k, width: l.width, fixed: raw[:k*l.width]}
	return nil
}

// asBytes views numbers as their little-endian bytes (the machines deltafs
// builds for are little-endian).
func asBytes[T int32 | int64 | float32 | float64](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(v[0])))
}
