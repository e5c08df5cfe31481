package pqfile

import (
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

const (
	// maxHeaderSize bounds an encoded page header (its statistics can hold long values).
	maxHeaderSize = 1 << 20
	// firstHeaderRead is the first guess at a page header's size.
	firstHeaderRead = 256
)

// piece is a run of an output column chunk: source bytes, or produced bytes b when b is not nil.
type piece struct {
	src byteRange
	b   []byte
}

// chunkOut is one column chunk as the page filter writes it. Offsets are relative to the chunk.
type chunkOut struct {
	parts        []piece
	buf          *[]byte // holds the produced bytes of parts
	numValues    int64
	nulls        int64
	uncompressed int64 // headers plus uncompressed page sizes, as total_uncompressed_size
	size         int64
	dictOff      int64 // -1 without a dictionary page
	dataOff      int64 // -1 until the first data page
	encStats     []format.PageEncodingStats
}

// columnFilter filters the pages of one flat column chunk of a row group. It reads the source
// chunk page by page: pages with no deleted row become source pieces (never decompressed unless
// their null count must be computed), pages with only deleted rows are dropped, the others are
// decoded, filtered and encoded again.
type columnFilter struct {
	src     io.ReaderAt
	r       byteRange // the chunk in the source
	leaf    leafInfo
	md      *format.ColumnMetaData
	deleted []uint64 // sorted deleted rows, relative to the row group
	rows    int64    // rows of the row group
	dictN   int64    // values in the dictionary page; -1 without one
	row     int64    // rows of the pages walked so far
	s       *scratch
	out     chunkOut
	newOff  []int64 // for each produced piece in out.parts, its offset in out.buf
	win     []byte  // source bytes of the chunk from winOff, in s.win
	winOff  int64
	hdrRoom int // room left for the next produced page's header: the last one's size
	// pageRows and pageDel are the rows of the data page being handled and the index in deleted
	// of its first deleted row (or of the next one).
	pageRows int64
	pageDel  int
}

// corrupt returns an ErrCorrupt error naming the column and the page at chunk offset off.
func (f *columnFilter) corrupt(off int64, format string, args ...any) error {
	return fmt.Errorf("%w: column %q: page at byte %d of its chunk: %s", ErrCorrupt,
		strings.Join(f.md.PathInSchema, "."), off, fmt.Sprintf(format, args...))
}

// unsupported returns an errNoFastPath error naming the column.
func (f *columnFilter) unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: column %q: %s", errNoFastPath, strings.Join(f.md.PathInSchema, "."), fmt.Sprintf(format, args...))
}

// run walks every page of the chunk and fills f.out.
func (f *columnFilter) run() error {
	f.out.dictOff, f.out.dataOff, f.dictN = -1, -1, -1
	if f.md.NumValues != f.rows {
		return f.corrupt(0, "chunk holds %d values, row group %d rows", f.md.NumValues, f.rows)
	}
	var h format.PageHeader
	for off := int64(0); off < f.r.n; {
		hl, err := f.header(off, &h)
		if err != nil {
			return err
		}
		if h.CompressedPageSize < 0 || h.UncompressedPageSize < 0 || int64(h.CompressedPageSize) > f.r.n-off-hl {
			return f.corrupt(off, "page of %d bytes overruns the chunk", h.CompressedPageSize)
		}
		if int64(h.UncompressedPageSize) > pageLimit || int64(h.CompressedPageSize) > pageLimit {
			return fmt.Errorf("column %q: page at byte %d of its chunk: %w", strings.Join(f.md.PathInSchema, "."), off,
				limitf("page of %d bytes stored, %d inflated, is over the limit of %d bytes", h.CompressedPageSize, h.UncompressedPageSize, pageLimit))
		}
		if err := f.page(off, hl, &h); err != nil {
			return err
		}
		off += hl + int64(h.CompressedPageSize)
	}
	if f.row != f.rows {
		return f.corrupt(f.r.n, "pages hold %d rows, row group %d", f.row, f.rows)
	}
	f.finish()
	return nil
}

// page handles the page whose header h (hl bytes) starts at chunk offset off.
func (f *columnFilter) page(off, hl int64, h *format.PageHeader) error {
	whole := byteRange{f.r.off + off, hl + int64(h.CompressedPageSize)}
	switch h.Type {
	case format.DictionaryPage:
		if !h.DictionaryPageHeader.Valid || f.out.dataOff >= 0 || f.dictN >= 0 {
			return f.unsupported("dictionary page at byte %d", off)
		}
		f.dictN = int64(h.DictionaryPageHeader.V.NumValues)
		f.out.dictOff = f.out.size
		f.addSource(whole, hl, h, h.DictionaryPageHeader.V.Encoding)
		return nil
	case format.DataPage, format.DataPageV2:
		return f.dataPage(off, hl, h, whole)
	}
	return f.unsupported("page type %v", h.Type)
}

// dataPage copies, drops or filters a data page.
func (f *columnFilter) dataPage(off, hl int64, h *format.PageHeader, whole byteRange) error {
	n, enc, err := f.pageCounts(off, h)
	if err != nil {
		return err
	}
	if f.row+n > f.rows {
		return f.corrupt(off, "pages hold more than the row group's %d rows", f.rows)
	}
	lo := sort.Search(len(f.deleted), func(k int) bool { return f.deleted[k] >= uint64(f.row) })
	hi := lo + sort.Search(len(f.deleted)-lo, func(k int) bool { return f.deleted[lo+k] >= uint64(f.row+n) })
	dels, first := f.deleted[lo:hi], uint64(f.row)
	f.pageRows, f.pageDel = n, lo
	f.row += n
	switch {
	case len(dels) == int(n) && n > 0:
		return nil
	case len(dels) > 0:
		return f.filterPage(off, hl, h, dels, first)
	}
	nulls, err := f.keptNulls(off, hl, h, n)
	if err != nil {
		return err
	}
	f.out.numValues += n
	f.out.nulls += nulls
	if f.out.dataOff < 0 {
		f.out.dataOff = f.out.size
	}
	f.addSource(whole, hl, h, enc)
	return nil
}

// pageCounts returns a data page's value count and encoding, checked against the header kind.
func (f *columnFilter) pageCounts(off int64, h *format.PageHeader) (int64, format.Encoding, error) {
	switch {
	case h.Type == format.DataPage && h.DataPageHeader.Valid:
		v := &h.DataPageHeader.V
		if v.NumValues < 0 {
			return 0, 0, f.corrupt(off, "%d values", v.NumValues)
		}
		return int64(v.NumValues), v.Encoding, nil
	case h.Type == format.DataPageV2 && h.DataPageHeaderV2.Valid:
		v := &h.DataPageHeaderV2.V
		if v.NumValues < 0 || v.NumRows != v.NumValues || v.NumNulls < 0 || v.NumNulls > v.NumValues {
			return 0, 0, f.corrupt(off, "%d values, %d rows, %d nulls in a flat column", v.NumValues, v.NumRows, v.NumNulls)
		}
		// A flat column has no repetition levels, a required one no definition levels either
		// (parquet-go reads such a page with stale buffer bytes as values).
		if v.RepetitionLevelsByteLength != 0 || v.DefinitionLevelsByteLength < 0 ||
			(f.leaf.maxDef == 0 && v.DefinitionLevelsByteLength != 0) {
			return 0, 0, f.corrupt(off, "v2 page with %d/%d level bytes in a flat column", v.RepetitionLevelsByteLength, v.DefinitionLevelsByteLength)
		}
		return int64(v.NumValues), v.Encoding, nil
	}
	return 0, 0, f.corrupt(off, "%v page without its header", h.Type)
}

// keptNulls returns the null count of a data page kept as it is: 0 in a required column, from
// the header of a v2 page, from the decoded levels of a v1 page.
func (f *columnFilter) keptNulls(off, hl int64, h *format.PageHeader, n int64) (int64, error) {
	if f.leaf.maxDef == 0 || n == 0 {
		return 0, nil
	}
	if h.Type == format.DataPageV2 {
		return int64(h.DataPageHeaderV2.V.NumNulls), nil
	}
	pd, err := f.loadPage(off, hl, h, int(n), false)
	if err != nil {
		return 0, err
	}
	return int64(pd.n - pd.nonNull), nil
}

// addSource appends the source page whole (header of hl bytes, h) to the output.
func (f *columnFilter) addSource(whole byteRange, hl int64, h *format.PageHeader, enc format.Encoding) {
	parts := f.out.parts
	if k := len(parts) - 1; k >= 0 && parts[k].b == nil && parts[k].src.off+parts[k].src.n == whole.off {
		parts[k].src.n += whole.n
	} else {
		f.out.parts = append(parts, piece{src: whole})
		f.newOff = append(f.newOff, -1)
	}
	f.account(whole.n, hl+int64(h.UncompressedPageSize), h.Type, enc)
}

// account adds a page of n output bytes to the chunk's sizes and encoding statistics.
func (f *columnFilter) account(n, uncompressed int64, t format.PageType, enc format.Encoding) {
	f.out.size += n
	f.out.uncompressed += uncompressed
	for k := range f.out.encStats {
		if es := &f.out.encStats[k]; es.PageType == t && es.Encoding == enc {
			es.Count++
			return
		}
	}
	f.out.encStats = append(f.out.encStats, format.PageEncodingStats{PageType: t, Encoding: enc, Count: 1})
}

// finish points the produced pieces into the final output buffer.
func (f *columnFilter) finish() {
	if f.out.buf == nil {
		return // no page produced
	}
	buf := *f.out.buf
	for k, start := range f.newOff {
		if start >= 0 {
			p := &f.out.parts[k]
			p.b, p.src = buf[start:start+p.src.n:start+p.src.n], byteRange{}
		}
	}
}

// header decodes the page header at chunk offset off into h and returns its encoded size. It
// reads a few hundred bytes first and more only for a header that does not fit.
func (f *columnFilter) header(off int64, h *format.PageHeader) (int64, error) {
	rem := f.r.n - off
	for size := int64(firstHeaderRead); ; size *= 16 {
		n := min(size, rem)
		buf, err := f.bytesAt(off, n)
		if err != nil {
			return 0, err
		}
		used, err := decodePageHeader(buf, h)
		if err == nil {
			return used, nil
		}
		if n == rem {
			return 0, f.corrupt(off, "bad page header: %v", err)
		}
		if n >= maxHeaderSize {
			return 0, f.unsupported("page header over %d bytes", maxHeaderSize)
		}
	}
}

// bytesAt returns the n bytes of the chunk at chunk offset off (n <= f.r.n-off), valid until
// the next call. Bytes not in the window are read with one pread of up to firstHeaderRead bytes
// more, which usually hold the next page's header: a filtered page costs one read, not two.
func (f *columnFilter) bytesAt(off, n int64) ([]byte, error) {
	if off >= f.winOff && off+n <= f.winOff+int64(len(f.win)) {
		return f.win[off-f.winOff : off-f.winOff+n], nil
	}
	m := max(n, min(n+firstHeaderRead, f.r.n-off))
	f.s.win = grow(f.s.win, int(m))
	f.win, f.winOff = nil, 0
	if err := readFull(f.src, f.s.win, f.r.off+off); err != nil {
		return nil, fmt.Errorf("column %q: %w", strings.Join(f.md.PathInSchema, "."), err)
	}
	f.win, f.winOff = f.s.win, off
	return f.win[:n], nil
}

// decodePageHeader decodes one thrift compact page header at the start of buf and returns its size.
func decodePageHeader(buf []byte, h *format.PageHeader) (n int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panicked: %v", r)
		}
	}()
	*h = format.PageHeader{}
	var proto thrift.CompactProtocol
	r := proto.NewReaderFromBytes(buf)
	if err := thrift.NewDecoder(r).Decode(h); err != nil {
		return 0, err
	}
	return int64(r.BytesRead()), nil
}

// encodePageHeader appends the thrift compact encoding of h to dst.
func encodePageHeader(dst []byte, h *format.PageHeader) ([]byte, error) {
	var proto thrift.CompactProtocol
	b, err := thrift.Marshal(&proto, h)
	if err != nil {
		return dst, fmt.Errorf("encode page header: %w", err)
	}
	return append(dst, b...), nil
}

// pageCRC returns the CRC a page header records for body: the standard CRC-32 of the page bytes
// after the header, as stored.
func pageCRC(body []byte) int32 { return int32(crc32.ChecksumIEEE(body)) }

// grow returns b resized to n bytes, reallocated if its capacity is smaller.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n, max(n, 2*cap(b)))
	}
	return b[:n]
}
