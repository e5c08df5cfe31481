// Package hostilepq writes Parquet files byte by byte for tests of
// hostile input: its own footer and page writer (thrift compact through
// parquet-go's format structs), so that a footer can claim what its pages
// do not hold, a page can declare one size and inflate to another, and a
// schema can nest as deep as a test wants. Tests only.
package hostilepq

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// Page is one data page (v1) as stored.
type Page struct {
	NumValues    int32
	Uncompressed int32 // declared uncompressed size
	Body         []byte
}

// Column is one top-level leaf column with one chunk per row group (the
// same pages in each).
type Column struct {
	Name     string
	Type     format.Type // Int64 or ByteArray (a UTF-8 string)
	Optional bool
	Codec    format.CompressionCodec
	Pages    []Page
	// Stats, when set, are the chunk's footer statistics.
	Stats *format.Statistics
}

// File is a file of RowGroups row groups of the same columns.
type File struct {
	Columns   []Column
	RowGroups int // default 1
	// GroupRows is each row group's num_rows (default: the values of the
	// first column); FileRows the file's (default: their sum).
	GroupRows, FileRows int64
	// DeepChain appends a chain of that many optional single-child groups
	// ending in an optional int32 leaf to the schema, with no chunk.
	DeepChain int
}

// Bytes encodes the file.
func (f File) Bytes() []byte {
	var out bytes.Buffer
	out.WriteString("PAR1")
	groups := max(f.RowGroups, 1)
	var meta format.FileMetaData
	meta.Version = 1
	meta.Schema = f.schema()
	var fileRows int64
	for range groups {
		rg := format.RowGroup{}
		var rows int64
		for _, c := range f.Columns {
			start := int64(out.Len())
			var nv, unc int64
			for _, p := range c.Pages {
				h := format.PageHeader{Type: format.DataPage, UncompressedPageSize: p.Uncompressed, CompressedPageSize: int32(len(p.Body))}
				h.DataPageHeader.Valid = true
				h.DataPageHeader.V = format.DataPageHeader{NumValues: p.NumValues, Encoding: format.Plain, DefinitionLevelEncoding: format.RLE, RepetitionLevelEncoding: format.RLE}
				hb := marshal(&h)
				out.Write(hb)
				out.Write(p.Body)
				nv += int64(p.NumValues)
				unc += int64(len(hb)) + int64(p.Uncompressed)
			}
			md := format.ColumnMetaData{Type: c.Type, Encoding: []format.Encoding{format.Plain, format.RLE}, PathInSchema: []string{c.Name},
				Codec: c.Codec, NumValues: nv, TotalUncompressedSize: unc, TotalCompressedSize: int64(out.Len()) - start, DataPageOffset: start}
			if c.Stats != nil {
				md.Statistics = *c.Stats
			}
			rg.Columns = append(rg.Columns, format.ColumnChunk{FileOffset: start, MetaData: md})
			rg.TotalByteSize += unc
			if rows == 0 {
				rows = nv
			}
		}
		if f.GroupRows != 0 {
			rows = f.GroupRows
		}
		rg.NumRows = rows
		fileRows += rows
		meta.RowGroups = append(meta.RowGroups, rg)
	}
	meta.NumRows = fileRows
	if f.FileRows != 0 {
		meta.NumRows = f.FileRows
	}
	for range f.Columns {
		meta.ColumnOrders = append(meta.ColumnOrders, format.ColumnOrder{Value: &format.TypeDefinedOrder{}})
	}
	fb := marshal(&meta)
	out.Write(fb)
	out.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(fb))))
	out.WriteString("PAR1")
	return out.Bytes()
}

func (f File) schema() []format.SchemaElement {
	n := int32(len(f.Columns))
	if f.DeepChain > 0 {
		n++
	}
	s := []format.SchemaElement{{Name: "schema"}}
	s[0].NumChildren.Valid, s[0].NumChildren.V = true, n
	opt := func(e *format.SchemaElement, optional bool) {
		e.RepetitionType.Valid = true
		e.RepetitionType.V = format.Required
		if optional {
			e.RepetitionType.V = format.Optional
		}
	}
	for _, c := range f.Columns {
		e := format.SchemaElement{Name: c.Name}
		e.Type.Valid, e.Type.V = true, c.Type
		opt(&e, c.Optional)
		if c.Type == format.ByteArray {
			e.ConvertedType.Valid, e.ConvertedType.V = true, deprecated.UTF8
			e.LogicalType = format.LogicalType{Value: &format.StringType{}}
		}
		s = append(s, e)
	}
	for i := range f.DeepChain {
		e := format.SchemaElement{Name: fmt.Sprintf("g%d", i)}
		e.NumChildren.Valid, e.NumChildren.V = true, 1
		opt(&e, true)
		s = append(s, e)
	}
	if f.DeepChain > 0 {
		e := format.SchemaElement{Name: "deep"}
		e.Type.Valid, e.Type.V = true, format.Int32
		opt(&e, true)
		s = append(s, e)
	}
	return s
}

func marshal(v any) []byte {
	b, err := thrift.Marshal(new(thrift.CompactProtocol), v)
	if err != nil {
		panic(err)
	}
	return b
}

// Int64Page is an uncompressed PLAIN page of values, nil ones null (the
// column must then be optional).
func Int64Page(optional bool, vals []*int64) Page {
	var raw []byte
	if optional {
		raw = levels(raw, vals)
	}
	for _, v := range vals {
		if v != nil {
			raw = binary.LittleEndian.AppendUint64(raw, uint64(*v))
		}
	}
	return Page{NumValues: int32(len(vals)), Uncompressed: int32(len(raw)), Body: raw}
}

// StringPage is an uncompressed PLAIN page of strings, nil ones null.
func StringPage(optional bool, vals []*string) Page {
	var raw []byte
	if optional {
		raw = levels(raw, vals)
	}
	for _, v := range vals {
		if v != nil {
			raw = binary.LittleEndian.AppendUint32(raw, uint32(len(*v)))
			raw = append(raw, *v...)
		}
	}
	return Page{NumValues: int32(len(vals)), Uncompressed: int32(len(raw)), Body: raw}
}

// levels appends the v1 definition levels (bit width 1, RLE runs) of vals.
func levels[T any](dst []byte, vals []*T) []byte {
	var enc []byte
	for i := 0; i < len(vals); {
		j := i
		for j < len(vals) && (vals[j] == nil) == (vals[i] == nil) {
			j++
		}
		enc = binary.AppendUvarint(enc, uint64(j-i)<<1)
		if vals[i] == nil {
			enc = append(enc, 0)
		} else {
			enc = append(enc, 1)
		}
		i = j
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(enc)))
	return append(dst, enc...)
}

// Gzip compresses a page's body, keeping its declared size.
func Gzip(p Page) Page { return Compress(p, format.Gzip) }

// Compress compresses a page's body with codec (any Parquet defines but
// LZO and Hadoop LZ4), keeping its declared size.
func Compress(p Page, codec format.CompressionCodec) Page {
	p.Body = compressBytes(codec, p.Body)
	return p
}

func compressBytes(codec format.CompressionCodec, b []byte) []byte {
	var out bytes.Buffer
	switch codec {
	case format.Uncompressed:
		return b
	case format.Snappy:
		return snappy.Encode(nil, b)
	case format.Lz4Raw:
		dst := make([]byte, lz4.CompressBlockBound(len(b)))
		n, err := lz4.CompressBlock(b, dst, nil)
		if err != nil || n == 0 {
			panic(fmt.Sprintf("lz4: %v", err))
		}
		return dst[:n]
	case format.Gzip:
		w := gzip.NewWriter(&out)
		w.Write(b)
		w.Close()
	case format.Zstd:
		w, _ := zstd.NewWriter(&out)
		w.Write(b)
		w.Close()
	case format.Brotli:
		w := brotli.NewWriter(&out)
		w.Write(b)
		w.Close()
	default:
		panic(fmt.Sprintf("hostilepq: no compressor for %v", codec))
	}
	return out.Bytes()
}

// Undecodable replaces a page's body with bytes that do not decode under
// codec (with the body's size), keeping the declared size.
func Undecodable(p Page, codec format.CompressionCodec) Page {
	body := compressBytes(codec, p.Body)
	bad := make([]byte, max(len(body), 16))
	for i := range bad {
		bad[i] = 0xff
	}
	p.Body = bad
	return p
}

// Bomb is a page body under codec (GZIP, ZSTD or Snappy) that declares
// declared bytes and inflates to inflated bytes of zeros, for a column
// of one required int64 value. A Snappy block states its decoded length
// first: that length is inflated, and the block holds the zeros it says.
func Bomb(codec format.CompressionCodec, declared int32, inflated int64) Page {
	if codec == format.Gzip {
		return GzipBomb(declared, inflated)
	}
	const member = bombMember
	one := compressBytes(codec, make([]byte, min(inflated, member)))
	var body []byte
	switch codec {
	case format.Zstd: // concatenated frames
		for n := int64(0); n < inflated; n += member {
			body = append(body, one...)
		}
	case format.Snappy:
		body = one
	default:
		panic(fmt.Sprintf("hostilepq: no bomb for %v", codec))
	}
	return Page{NumValues: 1, Uncompressed: declared, Body: body}
}

// bombMember is what one gzip member or zstd frame of a bomb inflates to;
// a bomb repeats it.
const bombMember = 8 << 20

// GzipBomb is a gzip page body that declares declared bytes and inflates
// to inflated bytes of zeros (gzip members of 8 MiB, concatenated), for
// a column of one required int64 value.
func GzipBomb(declared int32, inflated int64) Page {
	const member = bombMember
	var one bytes.Buffer
	w, _ := gzip.NewWriterLevel(&one, gzip.BestCompression)
	w.Write(make([]byte, member))
	w.Close()
	var body []byte
	for n := int64(0); n < inflated; n += member {
		body = append(body, one.Bytes()...)
	}
	return Page{NumValues: 1, Uncompressed: declared, Body: body}
}

// Int64 returns the plain encoding of v, as statistics hold it.
func Int64(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

// Ptrs returns pointers to 0..n-1, nil where null(i).
func Ptrs(n int, null func(i int) bool) []*int64 {
	out := make([]*int64, n)
	for i := range out {
		if null == nil || !null(i) {
			v := int64(i)
			out[i] = &v
		}
	}
	return out
}
