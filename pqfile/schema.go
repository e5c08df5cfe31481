package pqfile

import (
	"fmt"
	"slices"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"
)

// writeNode presents a source column to parquet-go's writer with the encoding and codec chosen
// for one row group. It keeps the source's field order (parquet.Group would sort fields by name)
// and everything else of the column (type, repetition, field id, logical type).
type writeNode struct {
	parquet.Field
	enc    encoding.Encoding
	codec  compress.Codec
	fields []parquet.Field
}

func (n *writeNode) Encoding() encoding.Encoding { return n.enc }
func (n *writeNode) Compression() compress.Codec { return n.codec }

func (n *writeNode) Fields() []parquet.Field {
	if n.Leaf() {
		return nil
	}
	return n.fields
}

// writeSchema returns a schema for re-encoding row group rg of the file whose root column is
// root: the same tree, each leaf with rg's codec and an encoding of the family rg used
// (parquet-go's own file schema takes both from the first row group and may pick RLE, a level
// encoding, as the value encoding).
func writeSchema(root *parquet.Column, rg *format.RowGroup) (*parquet.Schema, error) {
	leaf := 0
	var build func(c *parquet.Column) (*writeNode, error)
	build = func(c *parquet.Column) (*writeNode, error) {
		n := &writeNode{Field: c}
		if c.Leaf() {
			if leaf >= len(rg.Columns) {
				return nil, fmt.Errorf("%w: more leaf columns than column chunks", ErrCorrupt)
			}
			md := &rg.Columns[leaf].MetaData
			n.enc = valueEncoding(c.Type().Kind(), md.Encoding)
			n.codec = reencodeCodec(md.Codec)
			leaf++
			return n, nil
		}
		for _, child := range c.Columns() {
			f, err := build(child)
			if err != nil {
				return nil, err
			}
			n.fields = append(n.fields, f)
		}
		return n, nil
	}
	n, err := build(root)
	if err != nil {
		return nil, err
	}
	return parquet.NewSchema(root.Name(), n), nil
}

// valueEncoding picks the encoding for re-encoded values of kind from the encodings a source
// column chunk lists: dictionary if it used one, else a delta or byte-stream-split encoding it
// used that fits kind, else PLAIN. RLE and BIT_PACKED in the list describe levels, not values.
// legacyDictionary is PLAIN_DICTIONARY, deprecated but still listed by parquet-mr for v1 pages.
const legacyDictionary = format.Encoding(2)

func valueEncoding(kind parquet.Kind, used []format.Encoding) encoding.Encoding {
	has := func(e format.Encoding) bool { return slices.Contains(used, e) }
	switch {
	case kind != parquet.Boolean && (has(legacyDictionary) || has(format.RLEDictionary)):
		return &parquet.RLEDictionary
	case (kind == parquet.Int32 || kind == parquet.Int64) && has(format.DeltaBinaryPacked):
		return &parquet.DeltaBinaryPacked
	case kind == parquet.ByteArray && has(format.DeltaLengthByteArray):
		return &parquet.DeltaLengthByteArray
	case (kind == parquet.ByteArray || kind == parquet.FixedLenByteArray) && has(format.DeltaByteArray):
		return &parquet.DeltaByteArray
	case (kind == parquet.Float || kind == parquet.Double) && has(format.ByteStreamSplit):
		return &parquet.ByteStreamSplit
	}
	return &parquet.Plain
}

// reencodeCodec returns the codec re-encoded pages are compressed with. Snappy uses s2's
// standard-speed Snappy encoder: parquet-go's codec uses the "better" mode, which took a third of
// the CPU of re-encoding a row group for a few percent smaller pages. Both write the Snappy block
// format every reader decodes.
func reencodeCodec(c format.CompressionCodec) compress.Codec {
	if c == format.Snappy {
		return fastSnappy{}
	}
	return parquet.LookupCompressionCodec(c)
}

// fastSnappy is the Snappy codec with s2's fast encoder.
type fastSnappy struct{}

func (fastSnappy) String() string                            { return "SNAPPY" }
func (fastSnappy) CompressionCodec() format.CompressionCodec { return format.Snappy }
func (fastSnappy) Encode(dst, src []byte) ([]byte, error) {
	return s2.EncodeSnappy(dst, src), nil
}
func (fastSnappy) Decode(dst, src []byte) ([]byte, error) {
	return snappy.Decode(dst, src)
}
