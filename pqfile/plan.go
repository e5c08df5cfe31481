package pqfile

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go/format"
)

// Action says how one source row group is served.
type Action int

const (
	// Copy copies the row group's column chunks byte for byte.
	Copy Action = iota
	// Drop leaves the row group out: all its rows are deleted.
	Drop
	// Reencode decodes the row group and encodes its live rows again.
	Reencode
)

// String returns the action's lower-case name.
func (a Action) String() string {
	switch a {
	case Copy:
		return "copy"
	case Drop:
		return "drop"
	case Reencode:
		return "reencode"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Plan is what serving one source file with a deletion set and a rename requires. It is built
// from the footer alone (no data page is read) and is immutable: WriteTo may be called any number
// of times, concurrently, and always writes the same bytes.
type Plan struct {
	src        io.ReaderAt
	size       int64
	meta       format.FileMetaData // source footer, renamed; offsets are the source's
	footStart  int64               // offset of the source footer
	groups     []group
	footerOnly bool  // nothing deleted: output = source bytes up to the footer + new footer
	liveRows   int64 // rows in the output
	sizeOnce   sync.Once
	sized      atomic.Bool // outSize is set
	outSize    int64       // set by sizeOnce: exact output size, or -1 if it depends on re-encoding
	// stats says, per source row group, what the footer entries of its chunks must leave out of
	// their statistics when the chunks are copied (nil: nothing).
	stats [][]statsEdit
	// shape reshapes the output's columns (nil: the source's columns as they are).
	shape *shaping
	// spliced, when set, is the whole output past the source's bytes up to its footer: a
	// reshaping that only adds constants, laid out by splicing (splice.go); meta, stats and
	// shape are then unset.
	spliced *spliced
}

// group is the plan for one source row group.
type group struct {
	action  Action
	first   int64       // file row index of the group's first row
	deleted []uint64    // Reencode only: sorted deleted row indexes relative to first
	chunks  []byteRange // source byte range of each column chunk
	merged  []byteRange // chunks with adjacent ranges merged, for fewer copies
}

// byteRange is a half-open range [off, off+n) of the source.
type byteRange struct{ off, n int64 }

// NewPlan reads the footer of src (size bytes) and decides, per row group, how to serve the file
// without the rows in deleted (nil: none) and with rename applied (nil: none). It fails with
// ErrCorrupt, ErrEncrypted, ErrUnsupported or ErrInvalidArgument (a deleted index beyond the
// file's rows, a bad rename), or a wrapped read error.
func NewPlan(src io.ReaderAt, size int64, deleted *roaring64.Bitmap, rename *Rename) (*Plan, error) {
	return NewShapedPlan(src, size, deleted, rename, nil)
}

// NewShapedPlan is NewPlan whose output is also reshaped to shape (nil: not reshaped), after the
// rename. A source column that cannot be served in the shape's type is ErrUnsupported.
func NewShapedPlan(src io.ReaderAt, size int64, deleted *roaring64.Bitmap, rename *Rename, shape *Shape) (*Plan, error) {
	if (deleted == nil || deleted.IsEmpty()) && rename == nil && !noSplice.Load() {
		if p := newSplicedPlan(src, size, shape, spliceMemo); p != nil {
			return p, nil
		}
	}
	f, err := readFooter(src, size)
	if err != nil {
		return nil, err
	}
	p := &Plan{src: src, size: size, meta: f.meta, footStart: f.start}
	if p.stats, err = statsEdits(f.raw, &f.meta); err != nil {
		return nil, err
	}
	tree, err := BuildSchemaTree(p.meta.Schema)
	if err != nil {
		return nil, err
	}
	if _, err := applyRename(&p.meta, tree, rename); err != nil {
		return nil, err
	}
	if p.shape, err = applyShape(&p.meta, tree, shape); err != nil {
		return nil, err
	}
	if deleted == nil {
		deleted = roaring64.New()
	}
	if err := p.planGroups(deleted); err != nil {
		return nil, err
	}
	return p, nil
}

// planGroups checks row counts and chunk ranges and picks each row group's action.
func (p *Plan) planGroups(deleted *roaring64.Bitmap) error {
	var first int64
	for i := range p.meta.RowGroups {
		rg := &p.meta.RowGroups[i]
		if rg.NumRows < 0 || first+rg.NumRows < first {
			return fmt.Errorf("%w: row group %d has %d rows", ErrCorrupt, i, rg.NumRows)
		}
		g := group{first: first}
		for j := range rg.Columns {
			r, err := chunkRange(&rg.Columns[j], p.footStart)
			if err != nil {
				return fmt.Errorf("row group %d column %d: %w", i, j, err)
			}
			g.chunks = append(g.chunks, r)
		}
		g.merged = mergeRanges(g.chunks)
		g.action, g.deleted = classify(deleted, first, rg.NumRows)
		if err := checkReencodable(rg, g.action); err != nil {
			return fmt.Errorf("row group %d: %w", i, err)
		}
		if g.action != Drop {
			p.liveRows += rg.NumRows - int64(len(g.deleted))
		}
		p.groups = append(p.groups, g)
		first += rg.NumRows
	}
	if first != p.meta.NumRows {
		return fmt.Errorf("%w: footer says %d rows, row groups hold %d", ErrCorrupt, p.meta.NumRows, first)
	}
	if !deleted.IsEmpty() && deleted.Maximum() >= uint64(first) {
		return fmt.Errorf("%w: deleted row %d but the file has %d rows", ErrInvalidArgument, deleted.Maximum(), first)
	}
	p.footerOnly = deleted.IsEmpty()
	return nil
}

// classify returns the action for rows [first, first+n) and, for Reencode, the deleted indexes
// relative to first.
func classify(deleted *roaring64.Bitmap, first, n int64) (Action, []uint64) {
	if n == 0 || deleted.IsEmpty() {
		return Copy, nil
	}
	lo, hi := uint64(first), uint64(first+n)
	count := deleted.Rank(hi - 1)
	if lo > 0 {
		count -= deleted.Rank(lo - 1)
	}
	switch {
	case count == 0:
		return Copy, nil
	case count == uint64(n):
		return Drop, nil
	}
	rel := make([]uint64, 0, count)
	it := deleted.Iterator()
	it.AdvanceIfNeeded(lo)
	for it.HasNext() {
		v := it.Next()
		if v >= hi {
			break
		}
		rel = append(rel, v-lo)
	}
	return Reencode, rel
}

// checkReencodable refuses, before any byte is written, a row group to re-encode whose codec
// parquet-go cannot round-trip faithfully.
func checkReencodable(rg *format.RowGroup, a Action) error {
	if a != Reencode {
		return nil
	}
	for _, c := range rg.Columns {
		if !reencodable(c.MetaData.Codec) {
			return fmt.Errorf("%w: re-encoding %s column %q", ErrUnsupported, c.MetaData.Codec, c.MetaData.PathInSchema)
		}
	}
	return nil
}

// chunkRange returns the source bytes of a column chunk: from its first page (dictionary or
// data) over total_compressed_size, which must lie between the header magic and the footer.
func chunkRange(c *format.ColumnChunk, footStart int64) (byteRange, error) {
	if c.FilePath != "" {
		return byteRange{}, fmt.Errorf("%w: column chunk stored in %q", ErrUnsupported, c.FilePath)
	}
	md := &c.MetaData
	start := md.DataPageOffset
	if d := md.DictionaryPageOffset; d > 0 && d < start {
		start = d
	}
	n := md.TotalCompressedSize
	if start < int64(len(magic)) || n <= 0 || n > footStart || start > footStart-n {
		return byteRange{}, fmt.Errorf("%w: chunk at %d of %d bytes is outside the data", ErrCorrupt, start, n)
	}
	return byteRange{start, n}, nil
}

// mergeRanges joins ranges that follow each other directly, so a row group whose chunks are
// contiguous (the usual layout) is copied in one piece.
func mergeRanges(rs []byteRange) []byteRange {
	var out []byteRange
	for _, r := range rs {
		if k := len(out) - 1; k >= 0 && out[k].off+out[k].n == r.off {
			out[k].n += r.n
			continue
		}
		out = append(out, r)
	}
	return out
}

// computeSize fills outSize when it does not depend on re-encoding: the output is then laid out
// without reading any data (only produced bytes are counted, source ranges by their length). It
// runs once, when Size is first asked: a caller that lays the output out anyway never pays it.
func (p *Plan) computeSize() {
	defer p.sized.Store(true)
	p.outSize = -1
	if p.NeedsDecoding() {
		return
	}
	var c countSink
	if err := p.emit(&c); err == nil {
		p.outSize = c.n
	}
}

// NeedsDecoding reports whether the output needs data pages decoded (rows deleted inside a row
// group, values converted); otherwise it follows from the footer alone.
func (p *Plan) NeedsDecoding() bool {
	return slices.ContainsFunc(p.groups, func(g group) bool { return g.action == Reencode }) || (p.shape != nil && p.shape.converted)
}

// countSink counts the output's bytes.
type countSink struct{ n int64 }

func (c *countSink) source(r byteRange) error { c.n += r.n; return nil }
func (c *countSink) bytes(b []byte) error     { c.n += int64(len(b)); return nil }
func (c *countSink) pos() int64               { return c.n }

// outputMeta returns a shallow copy of the renamed source footer with no row groups and the
// output's row count.
func (p *Plan) outputMeta() *format.FileMetaData {
	meta := p.meta
	meta.RowGroups = make([]format.RowGroup, 0, len(p.groups))
	meta.NumRows = p.liveRows
	return &meta
}

// Size returns the exact size of the output and true, or false if it is only known after
// re-encoding (some row group is partly deleted); then a caller that must know the size first has
// to write the output somewhere (a cache file) and use WriteTo's count.
func (p *Plan) Size() (int64, bool) {
	p.sizeOnce.Do(p.computeSize)
	return p.outSize, p.outSize >= 0
}

// plannedSize returns the exact size when Size has computed it, else -1.
func (p *Plan) plannedSize() int64 {
	if !p.sized.Load() {
		return -1
	}
	return p.outSize
}

// Actions returns the action for each source row group, in file order.
func (p *Plan) Actions() []Action {
	out := make([]Action, len(p.groups))
	for i, g := range p.groups {
		out[i] = g.action
	}
	return out
}

// NumRows returns the number of rows in the output.
func (p *Plan) NumRows() int64 { return p.liveRows }

// FooterOnly reports whether the output is the source bytes up to its footer plus a new footer
// (nothing is deleted), with, for a reshaped output, made-up column chunks between them.
func (p *Plan) FooterOnly() bool { return p.footerOnly }

// Reshaped reports whether the output's columns differ from the source's (NewShapedPlan).
func (p *Plan) Reshaped() bool { return p.shape != nil || p.spliced != nil }

// spliceMemo remembers, by shape key and encoded schema, whether a file's columns are exactly
// a shape's other columns than its constants (splice.go).
var spliceMemo = NewShapeMemo(4 << 20)

// noSplice turns the splice off, for tests that compare it with the decoded path.
var noSplice atomic.Bool
