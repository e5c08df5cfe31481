package pqfile

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// A made-up column chunk holds one uncompressed v1 data page for all the rows of its row group:
// its levels are one RLE run each (every value null at the top, or every value present), and a
// constant's value is a one-entry dictionary the page's indexes all point to, so the chunk is a
// few dozen bytes whatever the row count. BOOLEAN has no dictionary encoding: a constant
// boolean's values are PLAIN, one bit per row.

// chunk appends to dst the made-up chunk of g for rows rows, placed at file offset pos, and
// returns its footer entry.
func (g *genLeaf) chunk(dst []byte, pos, rows int64) (format.ColumnChunk, []byte, error) {
	if rows > math.MaxInt32 {
		return format.ColumnChunk{}, dst, fmt.Errorf("%w: row group of %d rows for made-up column %q", ErrUnsupported, rows, g.el.Name)
	}
	n := int32(rows)
	start := len(dst)
	md := format.ColumnMetaData{Type: g.el.Type.V, Codec: format.Uncompressed, NumValues: rows, DataPageOffset: pos}
	md.Statistics.NullCount = rows
	dataEnc := format.Plain
	if g.value != nil {
		md.Statistics.NullCount = 0
		md.Statistics.MinValue, md.Statistics.MaxValue = g.value, g.value
		if g.el.Type.V != format.Boolean {
			dict, err := g.dictionaryPage()
			if err != nil {
				return format.ColumnChunk{}, dst, err
			}
			md.DictionaryPageOffset = pos
			dst = append(dst, dict...)
			md.DataPageOffset = pos + int64(len(dict))
			dataEnc = format.RLEDictionary
		}
	}
	page, err := encodeMadeUpPage(g.dataPageBody(n), n, dataEnc, md.Statistics)
	if err != nil {
		return format.ColumnChunk{}, dst, err
	}
	dst = append(dst, page...)
	md.Encoding = []format.Encoding{format.Plain, format.RLE}
	if dataEnc == format.RLEDictionary {
		md.Encoding = append(md.Encoding, format.RLEDictionary)
	}
	md.TotalCompressedSize = int64(len(dst) - start)
	md.TotalUncompressedSize = md.TotalCompressedSize
	return format.ColumnChunk{FileOffset: pos, MetaData: md}, dst, nil
}

// dictionaryPage returns the header and body of the one-entry dictionary page of a constant.
func (g *genLeaf) dictionaryPage() ([]byte, error) {
	body := g.value
	if g.el.Type.V == format.ByteArray {
		body = binary.LittleEndian.AppendUint32(nil, uint32(len(g.value)))
		body = append(body, g.value...)
	}
	h := format.PageHeader{Type: format.DictionaryPage, UncompressedPageSize: int32(len(body)), CompressedPageSize: int32(len(body)),
		DictionaryPageHeader: thrift.New(format.DictionaryPageHeader{NumValues: 1, Encoding: format.Plain})}
	b, err := encodePageHeader(nil, &h)
	if err != nil {
		return nil, err
	}
	return append(b, body...), nil
}

// dataPageBody returns the v1 page body of n rows: repetition levels (all 0) when the leaf is
// repeated somewhere, definition levels (0: null at the top; maxDef: present), then values.
func (g *genLeaf) dataPageBody(n int32) []byte {
	var b []byte
	if g.maxRep > 0 {
		b = appendRunLevels(b, n, 0, g.maxRep)
	}
	def := 0
	if g.value != nil {
		def = g.maxDef
	}
	if g.maxDef > 0 {
		b = appendRunLevels(b, n, def, g.maxDef)
	}
	switch {
	case g.value == nil:
	case g.el.Type.V == format.Boolean:
		fill := byte(0)
		if len(g.value) > 0 && g.value[0] != 0 {
			fill = 0xff
		}
		for range (int(n) + 7) / 8 {
			b = append(b, fill)
		}
	default:
		b = append(b, 1) // index bit width
		b = appendRun(b, n, 0, 1)
	}
	return b
}

// appendRunLevels appends a v1 page's levels, all equal to level: a 4-byte length, then one run.
func appendRunLevels(b []byte, n int32, level, maxLevel int) []byte {
	run := appendRun(nil, n, level, bits.Len(uint(maxLevel)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(run)))
	return append(b, run...)
}

// appendRun appends one RLE run of the hybrid encoding: n times value at bit width w (none for
// n = 0).
func appendRun(b []byte, n int32, value, w int) []byte {
	if n == 0 {
		return b
	}
	b = binary.AppendUvarint(b, uint64(n)<<1)
	for k := 0; k < (w+7)/8; k++ {
		b = append(b, byte(value>>(8*k)))
	}
	return b
}

// encodeMadeUpPage returns the header and body of an uncompressed v1 data page.
func encodeMadeUpPage(body []byte, n int32, enc format.Encoding, stats format.Statistics) ([]byte, error) {
	h := format.PageHeader{Type: format.DataPage, UncompressedPageSize: int32(len(body)), CompressedPageSize: int32(len(body)),
		DataPageHeader: thrift.New(format.DataPageHeader{NumValues: n, Encoding: enc,
			DefinitionLevelEncoding: format.RLE, RepetitionLevelEncoding: format.RLE, Statistics: stats})}
	b, err := encodePageHeader(nil, &h)
	if err != nil {
		return nil, err
	}
	return append(b, body...), nil
}
