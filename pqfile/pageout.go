package pqfile

import (
	"encoding/binary"
	"math"

	"github.com/klauspost/compress/s2"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// A filtered page is written straight into the chunk's output buffer: the levels and (when the
// page is uncompressed) the kept values are appended there, compressed values are compressed
// there, and the header, known only once the body is (sizes, CRC), goes into room left before the
// body. The room is the last header's size, so pages usually follow each other without a gap; a
// header that is shorter leaves a gap (the page starts a new piece), a longer one moves its body.

// initialHeaderRoom is the room left for the first produced page header of a chunk.
const initialHeaderRoom = 48

// liveRows is what a filtered page keeps of its source page pd: the runs of the non-null values
// of its live rows, their definition levels (nil in a required column), how many rows and how
// many non-null values.
type liveRows struct {
	pd            *pageData
	runs          []run
	levels        []uint8
	kept, nonNull int
}

// writePage appends the filtered form of the data page h at chunk offset off: levels and values
// of its kept rows (nulls of them null), compressed with the chunk's codec, under a new header.
// Page statistics keep only the exact null count; a CRC is written if the source page had one.
func (f *columnFilter) writePage(off int64, h *format.PageHeader, lr *liveRows) error {
	start, bodyStart := f.openPage(off, int(h.UncompressedPageSize))
	var defLen, uncompressed int
	var err error
	if h.Type == format.DataPage {
		uncompressed, err = f.bodyV1(off, lr)
	} else {
		v := &h.DataPageHeaderV2.V
		compressed := (!v.IsCompressed.Valid || v.IsCompressed.V) && f.md.Codec != format.Uncompressed
		defLen, uncompressed, err = f.bodyV2(off, lr, compressed)
	}
	if err != nil {
		return err
	}
	nh, enc, err := f.newHeader(h, lr, defLen, uncompressed, (*f.out.buf)[bodyStart:])
	if err != nil {
		return err
	}
	if f.s.hdrOut, err = encodePageHeader(f.s.hdrOut[:0], &nh); err != nil {
		return err
	}
	if f.out.dataOff < 0 {
		f.out.dataOff = f.out.size
	}
	n := f.closePage(off, start, bodyStart, f.s.hdrOut)
	f.account(n, int64(len(f.s.hdrOut)+uncompressed), nh.Type, enc)
	f.out.numValues += int64(lr.kept)
	f.out.nulls += int64(lr.kept - lr.nonNull)
	return nil
}

// newHeader returns the header of the filtered page of the source page h, whose body (compressed
// as stored) is body, and its encoding.
func (f *columnFilter) newHeader(h *format.PageHeader, lr *liveRows, defLen, uncompressed int, body []byte) (format.PageHeader, format.Encoding, error) {
	nulls := lr.kept - lr.nonNull
	nh := format.PageHeader{Type: h.Type}
	stats := format.Statistics{NullCount: int64(nulls)}
	var enc format.Encoding
	if h.Type == format.DataPage {
		v := h.DataPageHeader.V
		v.NumValues, v.Statistics, enc = int32(lr.kept), stats, v.Encoding
		nh.DataPageHeader = thrift.New(v)
	} else {
		v := h.DataPageHeaderV2.V
		v.NumValues, v.NumNulls, v.NumRows = int32(lr.kept), int32(nulls), int32(lr.kept)
		v.DefinitionLevelsByteLength, v.Statistics, enc = int32(defLen), stats, v.Encoding
		nh.DataPageHeaderV2 = thrift.New(v)
	}
	if len(body) > math.MaxInt32 || uncompressed > math.MaxInt32 {
		return nh, enc, f.unsupported("filtered page of %d bytes", len(body))
	}
	nh.UncompressedPageSize, nh.CompressedPageSize = int32(uncompressed), int32(len(body))
	if h.CRC != 0 {
		nh.CRC = pageCRC(body)
	}
	return nh, enc, nil
}

// bodyV1 appends the body of a v1 data page, compressed as a whole, to the output: the
// definition levels (with their 4-byte length) then the values. It returns the uncompressed size.
func (f *columnFilter) bodyV1(off int64, lr *liveRows) (int, error) {
	compressed := f.md.Codec != format.Uncompressed
	dst := *f.out.buf
	if compressed {
		dst = f.s.page[:0]
	}
	n0 := len(dst)
	if f.leaf.maxDef > 0 {
		var err error
		dst = append(dst, 0, 0, 0, 0)
		if dst, f.s.lv, err = appendLevels(dst, f.s.lv, lr.levels, levelWidth(f.leaf.maxDef)); err != nil {
			return 0, f.corrupt(off, "encode levels: %v", err)
		}
		binary.LittleEndian.PutUint32(dst[n0:], uint32(len(dst)-n0-4))
	}
	dst, err := f.keepValues(off, dst, lr.pd, lr.runs, lr.nonNull)
	if err != nil {
		return 0, err
	}
	if !compressed {
		*f.out.buf = dst
		return len(dst) - n0, nil
	}
	f.s.page = dst
	return len(dst), f.compressOut(off, dst)
}

// bodyV2 appends the body of a v2 data page to the output: the definition levels, never
// compressed, then the values, compressed if compressed. It returns the size of the levels and
// the uncompressed size.
func (f *columnFilter) bodyV2(off int64, lr *liveRows, compressed bool) (int, int, error) {
	buf := *f.out.buf
	n0 := len(buf)
	if f.leaf.maxDef > 0 {
		var err error
		if buf, f.s.lv, err = appendLevels(buf, f.s.lv, lr.levels, levelWidth(f.leaf.maxDef)); err != nil {
			return 0, 0, f.corrupt(off, "encode levels: %v", err)
		}
		*f.out.buf = buf
	}
	defLen := len(buf) - n0
	if !compressed {
		buf, err := f.keepValues(off, buf, lr.pd, lr.runs, lr.nonNull)
		if err != nil {
			return 0, 0, err
		}
		*f.out.buf = buf
		return defLen, len(buf) - n0, nil
	}
	vals, err := f.keepValues(off, f.s.vals[:0], lr.pd, lr.runs, lr.nonNull)
	if err != nil {
		return 0, 0, err
	}
	f.s.vals = vals
	return defLen, defLen + len(vals), f.compressOut(off, vals)
}

// compressOut appends src compressed with the chunk's codec to the output. The codecs append to
// the room reserved for them (s2's Snappy needs at most MaxEncodedLen); a codec that needed more
// returned new memory, which is copied.
func (f *columnFilter) compressOut(off int64, src []byte) error {
	need := len(src) + len(src)/8 + 1024
	if f.md.Codec == format.Snappy {
		need = s2.MaxEncodedLen(len(src))
	}
	if need < 0 {
		return f.unsupported("compress %v page of %d bytes", f.md.Codec, len(src))
	}
	f.reserve(off, need)
	buf := *f.out.buf
	p := len(buf)
	out, err := reencodeCodec(f.md.Codec).Encode(buf[p:p], src)
	if err != nil {
		return f.unsupported("compress %v page: %v", f.md.Codec, err)
	}
	if len(out) > 0 && &out[0] != &buf[p : p+1][0] {
		f.reserve(off, len(out))
		buf = append(*f.out.buf, out...)
	} else {
		buf = buf[:p+len(out)]
	}
	*f.out.buf = buf
	return nil
}

// reserve makes room for n more bytes in the output buffer of the chunk, now at the page at
// chunk offset off. A new buffer (from pageBuffers) also has room for what the rest of the chunk
// is expected to produce: one buffer per chunk rather than doublings that copy and fault in fresh
// memory each time, and not a chunk's worth for a chunk with few touched pages.
func (f *columnFilter) reserve(off int64, n int) {
	b := f.out.buf
	if b != nil && cap(*b)-len(*b) >= n {
		return
	}
	size := n + f.restEstimate(off)
	if b != nil {
		size = max(size+len(*b), 2*cap(*b))
	}
	nb := pageBuffers.get(size)
	if b != nil {
		*nb = append(*nb, *b...)
		pageBuffers.Put(b)
	}
	f.out.buf = nb
}

// restEstimate returns about how many bytes the pages from chunk offset off on produce: the rest
// of the chunk (and a sixteenth) in the share of its pages that hold a deleted row, taking every
// page to hold as many rows as the current one.
func (f *columnFilter) restEstimate(off int64) int {
	rest := max(0, f.r.n-off)
	n := max(1, f.pageRows)
	first := f.row - f.pageRows // the current page's first row
	pages := max(1, (f.rows-first+n-1)/n)
	touched, last := int64(0), int64(-1)
	for _, d := range f.deleted[f.pageDel:] {
		if p := (int64(d) - first) / n; p != last {
			touched, last = touched+1, p
		}
	}
	return int(min(rest, rest*touched/pages) * 17 / 16)
}

// openPage starts a produced page for the source page at chunk offset off, whose uncompressed
// size is size: it leaves room for the header and returns where the page and its body start in
// the output buffer.
func (f *columnFilter) openPage(off int64, size int) (int, int) {
	room := f.hdrRoom
	if room == 0 {
		room = initialHeaderRoom
	}
	f.reserve(off, room+size+64)
	buf := *f.out.buf
	start := len(buf)
	*f.out.buf = buf[:start+room]
	return start, start + room
}

// closePage puts the header hdr right before the body, which starts at bodyStart in the output
// buffer (the page was opened at start), records the page as a produced piece and returns its
// size in bytes.
func (f *columnFilter) closePage(off int64, start, bodyStart int, hdr []byte) int64 {
	end := len(*f.out.buf)
	if d := len(hdr) - (bodyStart - start); d > 0 { // no room for the header: move the body up
		f.reserve(off, d)
		buf := (*f.out.buf)[:end+d]
		copy(buf[bodyStart+d:], buf[bodyStart:end])
		*f.out.buf = buf
		bodyStart, end = bodyStart+d, end+d
	}
	pos := bodyStart - len(hdr)
	copy((*f.out.buf)[pos:], hdr)
	f.hdrRoom = len(hdr)
	n := int64(end - pos)
	if k := len(f.out.parts) - 1; k >= 0 && f.newOff[k] >= 0 && f.newOff[k]+f.out.parts[k].src.n == int64(pos) {
		f.out.parts[k].src.n += n // produced pages follow each other in buf
	} else {
		f.out.parts = append(f.out.parts, piece{src: byteRange{int64(pos), n}})
		f.newOff = append(f.newOff, int64(pos))
	}
	return n
}
