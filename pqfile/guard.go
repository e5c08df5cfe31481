package pqfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
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

// CheckPages walks the page headers of every column chunk of f (a file of
// size bytes read through r, whose footer passed CheckFooter): each chunk
// must lie in the file, each page's compressed bytes in its chunk and both
// its sizes within MaxPageBytes. parquet-go allocates both sizes from a
// page header before reading, so a few hostile bytes could otherwise
// claim gigabytes; what it then decompresses goes through the bounded
// decoders of codecs.go. It reads the page headers only (64 KiB windows,
// 1 MiB for headers with large statistics).
func CheckPages(r io.ReaderAt, size int64, f *parquet.File) error {
	for i := range f.Metadata().RowGroups {
		if err := checkGroupPages(r, size, &f.Metadata().RowGroups[i]); err != nil {
			return fmt.Errorf("row group %d: %w", i, err)
		}
	}
	return nil
}

// checkGroupPages is CheckPages for one row group.
func checkGroupPages(r io.ReaderAt, size int64, rg *format.RowGroup) error {
	for j, cc := range rg.Columns {
		m := cc.MetaData
		if m.Codec != format.Uncompressed && !codecsBounded {
			return fmt.Errorf("%w: column %d: parquet-go's codec table is not the one deltafs bounds (codecs.go)", ErrUnsupported, j)
		}
		start := m.DataPageOffset
		if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < start {
			start = m.DictionaryPageOffset
		}
		if start < 4 || m.TotalCompressedSize < 0 || m.TotalCompressedSize > size-start {
			return fmt.Errorf("%w: column %d: chunk [%d,+%d) outside a file of %d bytes", ErrCorrupt, j, start, m.TotalCompressedSize, size)
		}
		if err := checkPages(r, start, start+m.TotalCompressedSize); err != nil {
			return fmt.Errorf("column %q: %w", strings.Join(m.PathInSchema, "."), err)
		}
	}
	return nil
}

// checkPages walks the pages of the column chunk [pos, end) of r.
func checkPages(r io.ReaderAt, pos, end int64) error {
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
		if ph.compressed < 0 || ph.compressed > end-pos-int64(hdr) || ph.uncompressed < 0 {
			return fmt.Errorf("%w: page at byte %d: sizes %d compressed, %d uncompressed do not fit", ErrCorrupt, pos, ph.compressed, ph.uncompressed)
		}
		if ph.uncompressed > pageLimit {
			return fmt.Errorf("page at byte %d: %w", pos, limitf("page of %d bytes inflated is over the limit of %d bytes", ph.uncompressed, pageLimit))
		}
		pos += int64(hdr) + ph.compressed
	}
	return nil
}

// pageSizes holds the PageHeader fields the checks need.
type pageSizes struct {
	uncompressed, compressed int64 // fields 2 and 3
}

// readPageSizes reads the PageHeader struct at the start of b: fields 2
// (uncompressed_page_size) and 3 (compressed_page_size). It returns them
// and the header's length.
func readPageSizes(b thriftBuf) (pageSizes, int, error) {
	var ph pageSizes
	i32 := func(f tfield) (int64, int, error) {
		u, end, err := b.uvarint(f.value)
		return int64(int32(uint32(u>>1) ^ -uint32(u&1))), end, err
	}
	end, err := b.skipStruct(0, 0, func(f tfield, depth int) (int, error) {
		var err error
		end := -1
		switch {
		case f.typ == tI32 && f.id == 2:
			ph.uncompressed, end, err = i32(f)
		case f.typ == tI32 && f.id == 3:
			ph.compressed, end, err = i32(f)
		}
		return end, err
	})
	return ph, end, err
}

// OpenFile opens a Parquet file deltafs did not write for reading with
// parquet-go, after CheckFooter and before CheckPages (page indexes and
// bloom filters are not read). A panic of parquet-go on hostile input is
// returned as an ErrCorrupt error.
func OpenFile(r io.ReaderAt, size int64) (f *parquet.File, err error) {
	defer recoverCorrupt(&err)
	if err := CheckFooter(r, size); err != nil {
		return nil, err
	}
	f, err = parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if err := CheckPages(r, size, f); err != nil {
		return nil, err
	}
	return f, nil
}
