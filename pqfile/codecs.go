package pqfile

import (
	"context"
	"sync"
	_ "unsafe" // go:linkname

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"
)

// Every page this process decompresses, whoever reads it (the page filter,
// parquet-go re-encoding a row group, a checkpoint, a change file, an inbox
// file), goes through decompress: the output is exactly the size the page
// header declares, never more, for every codec Parquet defines, and a page
// that decodes to anything else is corrupt. parquet-go's own codecs are
// unbounded (its LZ4_RAW decoder doubles its buffer on every error, without
// end; its GZIP and ZSTD decoders inflate whatever the stream holds), so the
// entries of its codec table are replaced by boundedCodec, which parquet-go
// calls with a buffer of the declared size.

// MaxPageBytes bounds the sizes a page header may declare (stored and
// inflated). Checked before anything is allocated for the page: by the page
// filter, by CheckPages before parquet-go reads a chunk, and by decompress.
const MaxPageBytes = 256 << 20

// pageLimit is MaxPageBytes, lowered by the fuzz targets (so that a mutated header does not
// make every input allocate a quarter of a gigabyte).
var pageLimit int64 = MaxPageBytes

// DecodeMemory is what the pages being decompressed at one time may hold
// together in this process, charged by their declared sizes before they
// are inflated: with MaxPageBytes, the most a burst of corrupt or hostile
// pages can make resident.
const DecodeMemory = 256 << 20

var decodeBudget = NewBudget(DecodeMemory)

var inflaters = sync.Pool{New: func() any { return new(inflater) }}

// decompress inflates src, a page body compressed with codec, into dst,
// whose length is the size the page's header declares, and returns the
// page (src itself for an uncompressed page). It waits for its share of
// DecodeMemory.
func decompress(codec format.CompressionCodec, src, dst []byte) ([]byte, error) {
	return decompressUpTo(codec, src, dst, true)
}

// decompressUpTo is decompress; for exact false the page may also be
// shorter than dst (inflateUpTo).
func decompressUpTo(codec format.CompressionCodec, src, dst []byte, exact bool) ([]byte, error) {
	n := int64(len(dst))
	if n > pageLimit {
		return nil, limitf("page of %d bytes inflated is over the limit of %d bytes", n, pageLimit)
	}
	if codec == format.Uncompressed {
		return (&inflater{}).inflateUpTo(codec, src, dst, exact)
	}
	if err := decodeBudget.acquire(context.Background(), n); err != nil {
		return nil, err
	}
	defer decodeBudget.release(n)
	z := inflaters.Get().(*inflater)
	defer inflaters.Put(z)
	return z.inflateUpTo(codec, src, dst, exact)
}

// boundedCodec is a parquet-go codec whose Decode goes through decompress.
// parquet-go hands Decode a buffer of the page's declared size
// (Column.decompress; for a V2 page that size includes the levels, so the
// values may inflate to less). A call without one (bloom filters, which
// deltafs never checks) is held to zero bytes.
type boundedCodec struct{ compress.Codec }

func (c boundedCodec) Decode(dst, src []byte) ([]byte, error) {
	out, err := decompressUpTo(c.CompressionCodec(), src, dst, false)
	if err != nil {
		return nil, err
	}
	if len(out) > 0 && len(dst) > 0 && &out[0] != &dst[0] {
		out = dst[:copy(dst, out)] // an uncompressed page: parquet-go keeps the buffer it gave
	}
	return out, nil
}

// compressionCodecs is parquet-go's codec table, indexed by
// format.CompressionCodec: `[...]compress.Codec{format.Uncompressed: ...,
// format.Lz4Raw: ...}` in compress.go, so [8]compress.Codec.
// TestCodecTableDeclaration checks that declaration in the parquet-go
// source this module builds with, and installCodecs checks every entry
// against parquet.LookupCompressionCodec before writing any: a parquet-go
// whose table differs fails that test, and a binary built with it
// anyway decodes no compressed page through parquet-go (codecsBounded).
//
//go:linkname compressionCodecs github.com/parquet-go/parquet-go.compressionCodecs
var compressionCodecs [8]compress.Codec

// codecsBounded reports whether parquet-go's table holds boundedCodec for
// every codec it supports; when false, nothing is handed to parquet-go to
// decompress (reencodable, CheckPages).
var codecsBounded = installCodecs()

func installCodecs() bool {
	for i := range compressionCodecs {
		got := parquet.LookupCompressionCodec(format.CompressionCodec(i))
		if compressionCodecs[i] == nil {
			if got.String() != "UNSUPPORTED" {
				return false
			}
			continue
		}
		if compressionCodecs[i] != got || got.CompressionCodec() != format.CompressionCodec(i) {
			return false
		}
	}
	if parquet.LookupCompressionCodec(format.CompressionCodec(len(compressionCodecs))).String() != "UNSUPPORTED" {
		return false // a longer table
	}
	for i, c := range compressionCodecs {
		if c != nil && i != int(format.Uncompressed) {
			compressionCodecs[i] = boundedCodec{c}
		}
	}
	return true
}
