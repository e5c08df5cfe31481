package pqfile

import (
	"bytes"
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// inflater decompresses pages into a buffer of exactly the size their
// header declares, never more: streaming codecs are read up to that size
// and one byte further, and a page that inflates past it (a
// decompression bomb) or short of it is corrupt. Its decoders are reused
// from page to page; Close releases them.
type inflater struct {
	gz *gzip.Reader
	zd *zstd.Decoder
	br *brotli.Reader
}

var errInflate = fmt.Errorf("%w: page does not inflate to its declared size", ErrCorrupt)

// maxZstdWindow bounds the history a zstd page may ask the decoder to
// keep; a page's window never needs to exceed the page, and proofs refuse
// pages over the proof budget anyway.
const maxZstdWindow = 256 << 20

// inflate decompresses src (codec) into dst, which has the declared
// size, or returns src itself for an uncompressed page of that size.
func (z *inflater) inflate(codec format.CompressionCodec, src, dst []byte) ([]byte, error) {
	return z.inflateUpTo(codec, src, dst, true)
}

// inflateUpTo is inflate, but for exact false a page may also inflate to
// fewer bytes than dst holds (never more): parquet-go hands its decoder
// a buffer of a V2 page's whole declared size, levels included, for the
// values alone.
func (z *inflater) inflateUpTo(codec format.CompressionCodec, src, dst []byte, exact bool) ([]byte, error) {
	size := len(dst)
	fits := func(n int) bool { return n == size || (!exact && n >= 0 && n < size) }
	switch codec {
	case format.Uncompressed:
		if !fits(len(src)) {
			return nil, fmt.Errorf("%w: %d bytes stored, %d declared", errInflate, len(src), size)
		}
		return src, nil
	case format.Snappy:
		n, err := snappy.DecodedLen(src)
		if err != nil || !fits(n) {
			return nil, fmt.Errorf("%w: snappy block says %d bytes, the page header %d", errInflate, n, size)
		}
		out, err := snappy.Decode(dst[:n], src)
		if err != nil || len(out) != n {
			return nil, fmt.Errorf("%w: snappy: %v", errInflate, err)
		}
		return out, nil
	case format.Lz4Raw:
		n, err := lz4.UncompressBlock(src, dst)
		if err != nil || !fits(n) {
			return nil, fmt.Errorf("%w: LZ4_RAW block does not decode to its declared %d bytes", errInflate, size)
		}
		return dst[:n], nil
	case format.Gzip:
		if z.gz == nil {
			z.gz = new(gzip.Reader)
		}
		if err := z.gz.Reset(bytes.NewReader(src)); err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", errInflate, err)
		}
		return readUpTo(z.gz, dst, exact)
	case format.Zstd:
		if z.zd == nil {
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(maxZstdWindow))
			if err != nil {
				return nil, err
			}
			z.zd = d
		}
		if err := z.zd.Reset(bytes.NewReader(src)); err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", errInflate, err)
		}
		return readUpTo(z.zd, dst, exact)
	case format.Brotli:
		if z.br == nil {
			z.br = brotli.NewReader(bytes.NewReader(src))
		} else if err := z.br.Reset(bytes.NewReader(src)); err != nil {
			return nil, fmt.Errorf("%w: brotli: %v", errInflate, err)
		}
		return readUpTo(z.br, dst, exact)
	}
	return nil, fmt.Errorf("%w: compression codec %v", ErrUnsupported, codec)
}

// readUpTo fills dst from r (for exact false, the bytes up to r's end if
// it ends sooner) and checks that r ends there.
func readUpTo(r io.Reader, dst []byte, exact bool) ([]byte, error) {
	n, err := io.ReadFull(r, dst)
	if err != nil && (exact || (err != io.EOF && err != io.ErrUnexpectedEOF)) {
		return nil, fmt.Errorf("%w: inflates to %d bytes of the %d declared: %v", errInflate, n, len(dst), err)
	}
	if n < len(dst) {
		return dst[:n], nil
	}
	var one [1]byte
	switch _, err := io.ReadFull(r, one[:]); {
	case err == nil:
		return nil, fmt.Errorf("%w: inflates past its declared %d bytes", errInflate, len(dst))
	case err != io.EOF:
		return nil, fmt.Errorf("%w: after %d bytes: %v", errInflate, len(dst), err)
	}
	return dst, nil
}

func (z *inflater) Close() {
	if z.zd != nil {
		z.zd.Close()
	}
}
