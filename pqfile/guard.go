package pqfile

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// Guards run before parquet-go parses a file that deltafs did not write
// (a checkpoint, a data file, an inbox file): parquet-go allocates the
// lengths it reads (a footer of up to 4 GiB, Thrift lists of up to 2^31
// elements, page sizes) before finding that the bytes are not there, so
// a few hostile bytes could exhaust memory. Their errors wrap ErrCorrupt;
// callers add their own sentinel.

// CheckFooter checks that a Parquet file's footer cannot make parquet-go
// allocate more than a small multiple of the file's size: it reads the
// last 8 bytes, checks the closing "PAR1" magic and that the footer
// length fits in the file, then walks the footer's Thrift encoding with
// the package's one Thrift reader (thriftwalk.go): every string, list,
// set and map must fit in the bytes left, nesting stays under 64 levels,
// and the footer keeps to the Limits in force (limits.go): its size, the
// schema's elements and depth, the row groups and their rows.
func CheckFooter(r io.ReaderAt, size int64) error {
	const head = 4 // "PAR1"
	if size < head+trailerLen {
		return fmt.Errorf("%w: parquet file of %d bytes is too short", ErrCorrupt, size)
	}
	var b [trailerLen]byte
	if err := readFull(r, b[:], size-trailerLen); err != nil {
		return fmt.Errorf("read parquet footer length: %w", err)
	}
	if string(b[4:]) != magic {
		return fmt.Errorf("%w: no PAR1 magic at the end of the parquet file", ErrCorrupt)
	}
	n := int64(binary.LittleEndian.Uint32(b[:4]))
	if n > size-head-trailerLen {
		return fmt.Errorf("%w: parquet footer length %d does not fit a file of %d bytes", ErrCorrupt, n, size)
	}
	lim := CurrentLimits()
	if n > lim.MaxFooterBytes {
		return limitf("footer of %d bytes is over the limit of %d bytes (--max-parquet-footer)", n, lim.MaxFooterBytes)
	}
	footer := make([]byte, n)
	if err := readFull(r, footer, size-trailerLen-n); err != nil {
		return fmt.Errorf("read parquet footer: %w", err)
	}
	if err := checkLimits(footer, lim); err != nil { // walks all of it, bounds-checked
		return fmt.Errorf("parquet footer: %w", err)
	}
	return nil
}

// FooterNumRows reads the row count from a Parquet file's footer.
func FooterNumRows(r io.ReaderAt, size int64) (n int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: parquet footer: %v", ErrCorrupt, p)
		}
	}()
	if err := CheckFooter(r, size); err != nil {
		return 0, err
	}
	f, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return 0, fmt.Errorf("parquet footer: %w", err)
	}
	return f.NumRows(), nil
}

// maxPageBytes bounds a page's uncompressed size: parquet-go allocates it
// before decompressing. Writers use pages of about 1 MiB.
const maxPageBytes = 256 << 20

// CheckPages walks the page headers of every column chunk of f (a file of
// size bytes read through r, whose footer passed CheckFooter): each chunk
// must lie in the file, each page's compressed bytes in its chunk and its
// uncompressed size under 256 MiB. parquet-go allocates both sizes from a
// page header before reading, so a few hostile bytes could otherwise
// claim gigabytes. It reads the page headers only (64 KiB windows, 1 MiB
// for headers with large statistics).
func CheckPages(r io.ReaderAt, size int64, f *parquet.File) error {
	for i, rg := range f.Metadata().RowGroups {
		for j, cc := range rg.Columns {
			m := cc.MetaData
			start := m.DataPageOffset
			if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < start {
				start = m.DictionaryPageOffset
			}
			if start < 4 || m.TotalCompressedSize < 0 || m.TotalCompressedSize > size-start {
				return fmt.Errorf("%w: row group %d column %d: chunk [%d,+%d) outside a file of %d bytes", ErrCorrupt, i, j, start, m.TotalCompressedSize, size)
			}
			if err := checkPages(r, start, start+m.TotalCompressedSize, m.Codec == format.Lz4Raw); err != nil {
				return fmt.Errorf("row group %d column %d: %w", i, j, err)
			}
		}
	}
	return nil
}

// checkPages walks the pages of the column chunk [pos, end) of r. With
// lz4 set (an LZ4_RAW chunk) each page is also trial-decoded into a buffer
// of its declared size: parquet-go's LZ4 decoder doubles its buffer
// without bound on a corrupt block.
func checkPages(r io.ReaderAt, pos, end int64, lz4 bool) error {
	for pos < end {
		var hdr int
		var ph pageSizes
		var err error
		for _, window := range []int64{64 << 10, 1 << 20} {
			buf := make([]byte, min(window, end-pos))
			if err = readFull(r, buf, pos); err != nil {
				return err
			}
			if ph, hdr, err = readPageSizes(buf); err == nil {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("page header at byte %d: %w", pos, err)
		}
		if ph.compressed < 0 || ph.compressed > end-pos-int64(hdr) || ph.uncompressed < 0 || ph.uncompressed > maxPageBytes {
			return fmt.Errorf("%w: page at byte %d: sizes %d compressed, %d uncompressed do not fit", ErrCorrupt, pos, ph.compressed, ph.uncompressed)
		}
		if lz4 {
			if err := checkLZ4Page(r, pos+int64(hdr), ph); err != nil {
				return fmt.Errorf("page at byte %d: %w", pos, err)
			}
		}
		pos += int64(hdr) + ph.compressed
	}
	return nil
}

// pageSizes holds the PageHeader fields the checks need.
type pageSizes struct {
	uncompressed, compressed int64 // fields 2 and 3
	levels                   int64 // V2 pages: uncompressed level bytes before the values
	valuesCompressed         bool  // V2 pages: is_compressed (default true)
}

// readPageSizes reads the PageHeader struct at the start of b: fields 2
// (uncompressed_page_size), 3 (compressed_page_size) and, in field 8
// (data_page_header_v2), the level byte lengths (5, 6) and is_compressed
// (7). It returns them and the header's length.
func readPageSizes(b thriftBuf) (pageSizes, int, error) {
	ph := pageSizes{valuesCompressed: true}
	i32 := func(f tfield) (int64, int, error) {
		u, end, err := b.uvarint(f.value)
		return int64(int32(uint32(u>>1) ^ -uint32(u&1))), end, err
	}
	v2 := func(f tfield, _ int) (int, error) {
		switch {
		case f.typ == tI32 && (f.id == 5 || f.id == 6):
			n, end, err := i32(f)
			ph.levels += max(n, 0)
			return end, err
		case (f.typ == tTrue || f.typ == tFalse) && f.id == 7:
			ph.valuesCompressed = f.typ == tTrue
			return f.value, nil
		}
		return -1, nil
	}
	end, err := b.skipStruct(0, 0, func(f tfield, depth int) (int, error) {
		var err error
		end := -1
		switch {
		case f.typ == tI32 && f.id == 2:
			ph.uncompressed, end, err = i32(f)
		case f.typ == tI32 && f.id == 3:
			ph.compressed, end, err = i32(f)
		case f.typ == tStruct && f.id == 8:
			end, err = b.skipStruct(f.value, depth+1, v2)
		}
		return end, err
	})
	return ph, end, err
}

// checkLZ4Page decodes an LZ4_RAW page body at off into a buffer of the
// size its header declares; a block that does not fit is corrupt.
func checkLZ4Page(r io.ReaderAt, off int64, ph pageSizes) error {
	if !ph.valuesCompressed || ph.levels > ph.compressed || ph.levels > ph.uncompressed {
		return nil
	}
	src := make([]byte, ph.compressed-ph.levels)
	if err := readFull(r, src, off+ph.levels); err != nil {
		return err
	}
	dst := make([]byte, ph.uncompressed-ph.levels)
	if n, err := lz4.UncompressBlock(src, dst); err != nil || n != len(dst) {
		return fmt.Errorf("%w: LZ4_RAW block does not decode to its declared %d bytes", ErrCorrupt, len(dst))
	}
	return nil
}
