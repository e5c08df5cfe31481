package pqfile

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// copyBufferSize is the buffer used to move raw chunk bytes from the source.
const copyBufferSize = 1 << 20

// WriteTo writes the output file to w and returns the number of bytes written. When Size reports
// an exact size, the count equals it (anything else is an error). On error, w may hold a partial
// output.
func (p *Plan) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	err := p.emit(&copySink{cw: cw, src: p.src, buf: make([]byte, copyBufferSize)})
	if err != nil {
		return cw.n, err
	}
	if planned := p.plannedSize(); planned >= 0 && cw.n != planned {
		return cw.n, fmt.Errorf("pqfile: wrote %d bytes, planned %d", cw.n, planned)
	}
	return cw.n, nil
}

// sink receives the output in order, as ranges of the source and produced bytes.
type sink interface {
	source(r byteRange) error // the source bytes r come next
	bytes(b []byte) error     // b comes next
	pos() int64               // bytes of output so far
}

// copySink writes the output to a writer, copying source ranges through a buffer.
type copySink struct {
	cw  *countWriter
	src io.ReaderAt
	buf []byte
}

func (s *copySink) source(r byteRange) error { return copyRange(s.cw, s.src, r, s.buf) }
func (s *copySink) pos() int64               { return s.cw.n }
func (s *copySink) bytes(b []byte) error {
	_, err := s.cw.Write(b)
	return err
}

// emit sends the whole output to s.
func (p *Plan) emit(s sink) error {
	if p.spliced != nil {
		if err := s.source(byteRange{0, p.footStart}); err != nil {
			return err
		}
		if err := s.bytes(p.spliced.gen); err != nil {
			return err
		}
		return s.bytes(p.spliced.tail)
	}
	if p.footerOnly {
		if err := s.source(byteRange{0, p.footStart}); err != nil {
			return err
		}
		if p.shape == nil {
			return emitFooter(s, &p.meta, p.stats)
		}
		meta := p.outputMeta()
		meta.NumRows = p.meta.NumRows
		var edits [][]statsEdit
		var file decodeFile
		for i := range p.meta.RowGroups {
			rg := p.meta.RowGroups[i]
			rg, e, err := p.emitShaped(s, rg, p.stats[i], p.converter(&file, i, nil))
			if err != nil {
				return fmt.Errorf("row group %d: %w", i, err)
			}
			meta.RowGroups, edits = append(meta.RowGroups, rg), append(edits, e)
		}
		p.shape.shapedMeta(meta)
		return emitFooter(s, meta, edits)
	}
	return p.emitRowGroups(s)
}

// emitShaped returns the output form of rg, whose chunks are already at their output offsets
// with statistics edits edits, and sends the bytes of its made-up chunks; without a shape it
// returns rg and edits.
func (p *Plan) emitShaped(s sink, rg format.RowGroup, edits []statsEdit,
	convert func(col int, c *convLeaf, pos int64) (format.ColumnChunk, []byte, error)) (format.RowGroup, []statsEdit, error) {
	if p.shape == nil {
		return rg, edits, nil
	}
	out, outEdits, gen, err := p.shape.shapedGroup(rg, edits, rg.NumRows, s.pos(), convert)
	if err != nil {
		return out, nil, err
	}
	if len(gen) > 0 {
		err = s.bytes(gen)
	}
	return out, outEdits, err
}

// converter returns the encoder of converted chunks of source row group i without the rows at
// the sorted relative indexes deleted, decoding through file.
func (p *Plan) converter(file *decodeFile, i int, deleted []uint64) func(col int, c *convLeaf, pos int64) (format.ColumnChunk, []byte, error) {
	return func(col int, c *convLeaf, pos int64) (format.ColumnChunk, []byte, error) {
		f, err := file.get(p)
		if err != nil {
			return format.ColumnChunk{}, nil, err
		}
		return p.convertedChunk(f, i, col, c, deleted, pos)
	}
}

// emitRowGroups sends the magic (the source's first bytes, checked by readFooter), every kept row
// group (copied or re-encoded) and the footer. Row groups are re-encoded ahead, in parallel.
func (p *Plan) emitRowGroups(s sink) error {
	if err := s.source(byteRange{0, int64(len(magic))}); err != nil {
		return err
	}
	meta := p.outputMeta()
	var edits [][]statsEdit // per output row group, as meta.RowGroups
	var file decodeFile
	re, err := p.startReencoding()
	if err != nil {
		return err
	}
	defer re.stop()
	for i, g := range p.groups {
		var rg format.RowGroup
		switch g.action {
		case Drop:
			continue
		case Copy:
			rg, _ = relocate(&p.meta.RowGroups[i], g.chunks, s.pos(), len(meta.RowGroups))
			for _, r := range g.merged {
				if err = s.source(r); err != nil {
					break
				}
			}
		case Reencode:
			var enc *encodedGroup
			if enc, err = re.wait(i); err == nil {
				rg, err = p.emitReencoded(s, enc, i, len(meta.RowGroups))
				enc.release()
			}
		}
		if err != nil {
			return fmt.Errorf("row group %d: %w", i, err)
		}
		var e []statsEdit // re-encoded: exact null counts
		if g.action == Copy {
			e = p.stats[i]
		}
		if rg, e, err = p.emitShaped(s, rg, e, p.converter(&file, i, g.deleted)); err != nil {
			return fmt.Errorf("row group %d: %w", i, err)
		}
		meta.RowGroups, edits = append(meta.RowGroups, rg), append(edits, e)
	}
	if p.shape != nil {
		p.shape.shapedMeta(meta)
	}
	return emitFooter(s, meta, edits)
}

// openFile opens the source with parquet-go for decoding; page indexes and bloom filters are not
// needed to read all values.
func (p *Plan) openFile() (f *parquet.File, err error) {
	defer recoverCorrupt(&err)
	f, err = parquet.OpenFile(p.src, p.size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%w: open for decoding: %v", ErrCorrupt, err)
	}
	if len(f.RowGroups()) != len(p.groups) {
		return nil, fmt.Errorf("%w: parquet-go sees %d row groups, footer has %d", ErrCorrupt, len(f.RowGroups()), len(p.groups))
	}
	return f, nil
}

// emitReencoded sends the chunks of row group i re-encoded as enc (produced bytes, and source
// ranges for pages the page filter kept) and returns its footer entry at the output position,
// with the source's (renamed) column paths.
func (p *Plan) emitReencoded(s sink, enc *encodedGroup, i, ordinal int) (format.RowGroup, error) {
	src := &p.meta.RowGroups[i]
	rg, _ := relocate(&enc.rg, enc.chunks, s.pos(), ordinal)
	for _, parts := range enc.parts {
		for _, pc := range parts {
			var err error
			if pc.b != nil {
				err = s.bytes(pc.b)
			} else {
				err = s.source(pc.src)
			}
			if err != nil {
				return format.RowGroup{}, err
			}
		}
	}
	for j := range rg.Columns {
		rg.Columns[j].MetaData.PathInSchema = src.Columns[j].MetaData.PathInSchema
		rg.Columns[j].MetaData.KeyValueMetadata = src.Columns[j].MetaData.KeyValueMetadata
	}
	rg.SortingColumns = src.SortingColumns
	return rg, nil
}

// relocate returns a copy of rg whose column chunks, laid out back to back in column order from
// pos, have every offset moved accordingly, and the position after the last chunk. Page indexes
// and bloom filters are dropped: they live elsewhere in the source and are optional.
func relocate(rg *format.RowGroup, chunks []byteRange, pos int64, ordinal int) (format.RowGroup, int64) {
	out := *rg
	out.Columns = slices.Clone(rg.Columns)
	out.FileOffset = pos
	out.Ordinal = int16(ordinal)
	out.TotalCompressedSize = 0
	for j := range out.Columns {
		moveChunk(&out.Columns[j], chunks[j], pos)
		out.TotalCompressedSize += chunks[j].n
		pos += chunks[j].n
	}
	return out, pos
}

// moveChunk shifts the offsets of a column chunk whose bytes move from r to start at to.
func moveChunk(c *format.ColumnChunk, r byteRange, to int64) {
	d := to - r.off
	within := func(off int64) bool { return off >= r.off && off < r.off+r.n }
	md := &c.MetaData
	md.DataPageOffset += d
	if within(md.DictionaryPageOffset) {
		md.DictionaryPageOffset += d
	} else {
		md.DictionaryPageOffset = 0
	}
	if within(md.IndexPageOffset) {
		md.IndexPageOffset += d
	} else {
		md.IndexPageOffset = 0
	}
	if c.FileOffset >= r.off && c.FileOffset <= r.off+r.n {
		c.FileOffset += d
	} else {
		c.FileOffset = to
	}
	c.OffsetIndexOffset, c.OffsetIndexLength = 0, 0
	c.ColumnIndexOffset, c.ColumnIndexLength = 0, 0
	md.BloomFilterOffset, md.BloomFilterLength = 0, 0
}

// copyRange copies the source bytes r to w; a source shorter than r is corrupt.
func copyRange(w io.Writer, src io.ReaderAt, r byteRange, buf []byte) error {
	n, err := io.CopyBuffer(w, io.NewSectionReader(src, r.off, r.n), buf)
	if err != nil {
		return fmt.Errorf("copy bytes %d..%d: %w", r.off, r.off+r.n, err)
	}
	if n != r.n {
		return fmt.Errorf("%w: source ends inside bytes %d..%d", ErrCorrupt, r.off, r.off+r.n)
	}
	return nil
}

// emitFooter sends the encoded footer of meta, whose row group i was copied from a source row
// group with statistics edits[i] (nil: re-encoded, or nothing to leave out).
func emitFooter(s sink, meta *format.FileMetaData, edits [][]statsEdit) error {
	tail, err := encodeOutputFooter(meta, edits)
	if err != nil {
		return err
	}
	return s.bytes(tail)
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return n, err
}

// recoverCorrupt turns a panic in parquet-go on hostile input into an ErrCorrupt error.
func recoverCorrupt(err *error) {
	if r := recover(); r != nil {
		*err = errors.Join(*err, fmt.Errorf("%w: parquet decoder panicked: %v", ErrCorrupt, r))
	}
}
