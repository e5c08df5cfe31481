package delta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// CheckParquetFooter checks, before parquet-go parses a file's footer,
// that the footer cannot make it allocate more than a small multiple of
// the file's size. parquet-go allocates the footer length it reads (up to
// 4 GiB) and every Thrift list length it reads (up to 2^31 elements)
// before finding that the bytes are not there, so a few hostile bytes in a
// checkpoint, a data file or an inbox file could exhaust memory.
//
// It reads the last 8 bytes and checks the closing "PAR1" magic and that
// the footer length fits in the file, then reads the footer and walks its
// Thrift compact encoding: every string, list, set and map must fit in the
// bytes left (each element takes at least one byte), nesting stays under
// 64 levels. The error does not wrap a sentinel; callers add theirs.
func CheckParquetFooter(r io.ReaderAt, size int64) error {
	const head, tail = 4, 8 // "PAR1"; footer length + "PAR1"
	if size < head+tail {
		return fmt.Errorf("parquet file of %d bytes is too short", size)
	}
	var b [tail]byte
	if err := readAtFull(r, b[:], size-tail); err != nil {
		return fmt.Errorf("read parquet footer length: %w", err)
	}
	if string(b[4:]) != "PAR1" {
		return fmt.Errorf("no PAR1 magic at the end of the parquet file")
	}
	n := int64(binary.LittleEndian.Uint32(b[:4]))
	if n > size-head-tail {
		return fmt.Errorf("parquet footer length %d does not fit a file of %d bytes", n, size)
	}
	footer := make([]byte, n)
	if err := readAtFull(r, footer, size-tail-n); err != nil {
		return fmt.Errorf("read parquet footer: %w", err)
	}
	w := &thriftWalker{b: footer}
	if err := w.skip(thriftStruct, 0); err != nil {
		return fmt.Errorf("parquet footer at byte %d: %w", w.pos, err)
	}
	return nil
}

func readAtFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// Thrift compact protocol types.
const (
	thriftTrue, thriftFalse, thriftByte, thriftI16, thriftI32, thriftI64       = 1, 2, 3, 4, 5, 6
	thriftDouble, thriftBinary, thriftList, thriftSet, thriftMap, thriftStruct = 7, 8, 9, 10, 11, 12
)

// thriftMaxDepth bounds nesting (parquet footers nest a few levels).
const thriftMaxDepth = 64

var errThriftShort = errors.New("truncated or oversized thrift value")

// thriftWalker skips Thrift compact values, checking lengths against the
// bytes left.
type thriftWalker struct {
	b   []byte
	pos int
}

func (w *thriftWalker) byte() (byte, error) {
	if w.pos >= len(w.b) {
		return 0, errThriftShort
	}
	w.pos++
	return w.b[w.pos-1], nil
}

func (w *thriftWalker) varint() (uint64, error) {
	v, n := binary.Uvarint(w.b[w.pos:])
	if n <= 0 {
		return 0, errThriftShort
	}
	w.pos += n
	return v, nil
}

// fits checks that n elements of at least min
// bytes each fit in what is left.
func (w *thriftWalker) fits(n uint64, min int) error {
	if n > uint64(len(w.b)-w.pos)/uint64(min) {
		return errThriftShort
	}
	return nil
}

// skip skips one value of type t.
func (w *thriftWalker) skip(t byte, depth int) error {
	if depth > thriftMaxDepth {
		return fmt.Errorf("thrift nesting deeper than %d", thriftMaxDepth)
	}
	switch t {
	case thriftTrue, thriftFalse:
		return nil
	case thriftByte:
		_, err := w.byte()
		return err
	case thriftI16, thriftI32, thriftI64:
		_, err := w.varint()
		return err
	case thriftDouble:
		return w.advance(8)
	case thriftBinary:
		n, err := w.varint()
		if err != nil {
			return err
		}
		return w.advance(n)
	case thriftList, thriftSet:
		return w.skipList(depth)
	case thriftMap:
		return w.skipMap(depth)
	case thriftStruct:
		return w.skipStruct(depth)
	}
	return fmt.Errorf("unknown thrift type %d", t)
}

func (w *thriftWalker) advance(n uint64) error {
	if err := w.fits(n, 1); err != nil {
		return err
	}
	w.pos += int(n)
	return nil
}

func (w *thriftWalker) skipStruct(depth int) error {
	for {
		h, err := w.byte()
		if err != nil {
			return err
		}
		if h == 0 {
			return nil // stop field
		}
		if h>>4 == 0 { // long form: the field id follows
			if _, err := w.varint(); err != nil {
				return err
			}
		}
		if err := w.skip(h&0x0f, depth+1); err != nil {
			return err
		}
	}
}

func (w *thriftWalker) skipList(depth int) error {
	h, err := w.byte()
	if err != nil {
		return err
	}
	n, t := uint64(h>>4), h&0x0f
	if n == 15 {
		if n, err = w.varint(); err != nil {
			return err
		}
	}
	if err := w.fits(n, 1); err != nil {
		return err
	}
	for range n {
		if t == thriftTrue || t == thriftFalse { // list booleans take a byte each
			if _, err := w.byte(); err != nil {
				return err
			}
			continue
		}
		if err := w.skip(t, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (w *thriftWalker) skipMap(depth int) error {
	n, err := w.varint()
	if err != nil || n == 0 {
		return err
	}
	kv, err := w.byte()
	if err != nil {
		return err
	}
	if err := w.fits(n, 2); err != nil {
		return err
	}
	for range n {
		for _, t := range []byte{kv >> 4, kv & 0x0f} {
			if err := w.skip(t, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxPageBytes bounds a page's uncompressed size: parquet-go allocates it
// before decompressing. Writers use pages of about 1 MiB.
const maxPageBytes = 256 << 20

// CheckParquetPages walks the page headers of every column chunk of f (a
// file of size bytes read through r, whose footer passed
// CheckParquetFooter): each chunk must lie in the file, each page's
// compressed bytes in its chunk and its uncompressed size under 256 MiB.
// parquet-go allocates both sizes from a page header before reading, so a
// few hostile bytes could otherwise claim gigabytes. It reads the page
// headers only (64 KiB windows, 1 MiB for headers with large statistics).
// The error does not wrap a sentinel.
func CheckParquetPages(r io.ReaderAt, size int64, f *parquet.File) error {
	for i, rg := range f.Metadata().RowGroups {
		for j, cc := range rg.Columns {
			m := cc.MetaData
			start := m.DataPageOffset
			if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < start {
				start = m.DictionaryPageOffset
			}
			if start < 4 || m.TotalCompressedSize < 0 || m.TotalCompressedSize > size-start {
				return fmt.Errorf("row group %d column %d: chunk [%d,+%d) outside a file of %d bytes", i, j, start, m.TotalCompressedSize, size)
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
		var ph pageHeader
		var err error
		for _, window := range []int64{64 << 10, 1 << 20} {
			buf := make([]byte, min(window, end-pos))
			if err = readAtFull(r, buf, pos); err != nil {
				return err
			}
			w := &thriftWalker{b: buf}
			if ph, err = w.pageHeader(); err == nil {
				hdr = w.pos
				break
			}
		}
		if err != nil {
			return fmt.Errorf("page header at byte %d: %w", pos, err)
		}
		if ph.compressed < 0 || ph.compressed > end-pos-int64(hdr) || ph.uncompressed < 0 || ph.uncompressed > maxPageBytes {
			return fmt.Errorf("page at byte %d: sizes %d compressed, %d uncompressed do not fit", pos, ph.compressed, ph.uncompressed)
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

// pageHeader holds the PageHeader fields the checks need.
type pageHeader struct {
	uncompressed, compressed int64 // fields 2 and 3
	levels                   int64 // V2 pages: uncompressed level bytes before the values
	valuesCompressed         bool  // V2 pages: is_compressed (default true)
}

// pageHeader reads a PageHeader struct: fields 2 (uncompressed_page_size),
// 3 (compressed_page_size) and, in field 8 (data_page_header_v2), the
// level byte lengths (5, 6) and is_compressed (7).
func (w *thriftWalker) pageHeader() (ph pageHeader, err error) {
	ph.valuesCompressed = true
	err = w.fields(func(id int64, t byte) (bool, error) {
		switch {
		case t == thriftI32 && id == 2:
			ph.uncompressed, err = w.zigzag()
		case t == thriftI32 && id == 3:
			ph.compressed, err = w.zigzag()
		case t == thriftStruct && id == 8:
			err = w.fields(func(id int64, t byte) (bool, error) {
				switch {
				case t == thriftI32 && (id == 5 || id == 6):
					n, err := w.zigzag()
					ph.levels += max(n, 0)
					return true, err
				case (t == thriftTrue || t == thriftFalse) && id == 7:
					ph.valuesCompressed = t == thriftTrue
					return true, nil
				}
				return false, nil
			})
		default:
			return false, nil
		}
		return true, err
	})
	return ph, err
}

// fields walks the fields of a struct, calling read for each; read
// returns false for a field it did not consume, which is then skipped.
func (w *thriftWalker) fields(read func(id int64, t byte) (bool, error)) error {
	id := int64(0)
	for {
		h, err := w.byte()
		if err != nil || h == 0 {
			return err
		}
		if d := int64(h >> 4); d != 0 {
			id += d
		} else if id, err = w.zigzag(); err != nil {
			return err
		}
		t := h & 0x0f
		done, err := read(id, t)
		if err != nil {
			return err
		}
		if !done {
			if err := w.skip(t, 1); err != nil {
				return err
			}
		}
	}
}

// checkLZ4Page decodes an LZ4_RAW page body at off into a buffer of the
// size its header declares; a block that does not fit is corrupt.
func checkLZ4Page(r io.ReaderAt, off int64, ph pageHeader) error {
	if !ph.valuesCompressed || ph.levels > ph.compressed || ph.levels > ph.uncompressed {
		return nil
	}
	src := make([]byte, ph.compressed-ph.levels)
	if err := readAtFull(r, src, off+ph.levels); err != nil {
		return err
	}
	dst := make([]byte, ph.uncompressed-ph.levels)
	if n, err := lz4.UncompressBlock(src, dst); err != nil || n != len(dst) {
		return fmt.Errorf("LZ4_RAW block does not decode to its declared %d bytes", len(dst))
	}
	return nil
}

func (w *thriftWalker) zigzag() (int64, error) {
	u, err := w.varint()
	return int64(u>>1) ^ -int64(u&1), err
}
