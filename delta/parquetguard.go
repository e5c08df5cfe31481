package delta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
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
			if err := checkPages(r, start, start+m.TotalCompressedSize); err != nil {
				return fmt.Errorf("row group %d column %d: %w", i, j, err)
			}
		}
	}
	return nil
}

// checkPages walks the pages of the column chunk [pos, end) of r.
func checkPages(r io.ReaderAt, pos, end int64) error {
	for pos < end {
		var hdr int
		var uncompressed, compressed int64
		var err error
		for _, window := range []int64{64 << 10, 1 << 20} {
			buf := make([]byte, min(window, end-pos))
			if err = readAtFull(r, buf, pos); err != nil {
				return err
			}
			w := &thriftWalker{b: buf}
			if uncompressed, compressed, err = w.pageSizes(); err == nil {
				hdr = w.pos
				break
			}
		}
		if err != nil {
			return fmt.Errorf("page header at byte %d: %w", pos, err)
		}
		if compressed < 0 || compressed > end-pos-int64(hdr) || uncompressed < 0 || uncompressed > maxPageBytes {
			return fmt.Errorf("page at byte %d: sizes %d compressed, %d uncompressed do not fit", pos, compressed, uncompressed)
		}
		pos += int64(hdr) + compressed
	}
	return nil
}

// pageSizes reads a PageHeader struct and returns its fields 2
// (uncompressed_page_size) and 3 (compressed_page_size).
func (w *thriftWalker) pageSizes() (uncompressed, compressed int64, err error) {
	id := int64(0)
	for {
		h, err := w.byte()
		if err != nil || h == 0 {
			return uncompressed, compressed, err
		}
		if d := int64(h >> 4); d != 0 {
			id += d
		} else if id, err = w.zigzag(); err != nil {
			return 0, 0, err
		}
		if t := h & 0x0f; t == thriftI32 && (id == 2 || id == 3) {
			v, err := w.zigzag()
			if err != nil {
				return 0, 0, err
			}
			if id == 2 {
				uncompressed = v
			} else {
				compressed = v
			}
		} else if err := w.skip(t, 1); err != nil {
			return 0, 0, err
		}
	}
}

func (w *thriftWalker) zigzag() (int64, error) {
	u, err := w.varint()
	return int64(u>>1) ^ -int64(u&1), err
}
