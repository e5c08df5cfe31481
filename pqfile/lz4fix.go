package pqfile

import (
	_ "unsafe" // go:linkname

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/lz4"
	"github.com/parquet-go/parquet-go/format"
	pierrec "github.com/pierrec/lz4/v4"
)

// parquet-go v0.32.0 decodes some LZ4_RAW pages to stale bytes, silently:
// Column.decompress hands the codec a pooled buffer of the page's
// uncompressed size and keeps that buffer when the result has that size,
// but lz4.Codec.Decode decompresses into a new buffer whenever the pooled
// one holds less than three times the compressed bytes (a page compressed
// less than 3x), so the page is read from a buffer nothing was written to.
// 20,000 random int64 values written and read back with LZ4_RAW came back
// all wrong, with no error. deltafs decodes pages with parquet-go to
// remove deleted rows, widen types and check constraints: the LZ4_RAW
// entry of parquet-go's codec table is replaced by lz4RawCodec, which
// decompresses into the buffer it is given when the output fits in it
// (and only then may LZ4_RAW row groups be re-encoded: reencodable).
// TestLZ4RawPagesDecode fails without it.

//go:linkname compressionCodecs github.com/parquet-go/parquet-go.compressionCodecs
var compressionCodecs [8]compress.Codec

// The table is parquet-go's, indexed by codec up to LZ4_RAW (7): its
// length is 8 in v0.32.0. The entry is replaced only where it is the one
// LookupCompressionCodec hands out, and that lookup must then give the
// replacement: a parquet-go whose table differs leaves it alone (and the
// test fails).
func init() {
	if compressionCodecs[format.Lz4Raw] == parquet.LookupCompressionCodec(format.Lz4Raw) {
		compressionCodecs[format.Lz4Raw] = &lz4RawCodec{Codec: &parquet.Lz4Raw}
	}
}

// lz4RawCodec is parquet-go's LZ4_RAW codec, decoding in place.
type lz4RawCodec struct{ *lz4.Codec }

func (c *lz4RawCodec) Decode(dst, src []byte) ([]byte, error) {
	if cap(dst) > 0 {
		if n, err := pierrec.UncompressBlock(src, dst[:cap(dst)]); err == nil {
			return dst[:n], nil
		}
	}
	return c.Codec.Decode(dst, src)
}
