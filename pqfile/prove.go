package pqfile

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/parquet-go/parquet-go/format"
)

// Prove decodes every page of a Parquet file that deltafs did not write,
// once, streaming, so that what a commit says about the file (its row
// count, null counts, bounds) comes from its values and not from its
// footer's claims, and a file whose pages do not decode is refused
// before readers meet it.
//
// Memory: a proof holds one page at a time (its compressed bytes, its
// inflated bytes, its levels and value offsets) plus the chunk's
// dictionary, charged to a Budget by the sizes the page headers declare
// before anything is read; a page inflating past its declared size is
// corrupt (inflate.go). So a proof's memory is at most the budget's limit
// whatever the file claims, and all proofs sharing a budget stay within
// it together.

// ProveOptions configures Prove.
type ProveOptions struct {
	// Budget is the memory this proof shares with others; nil is the
	// package's default budget of DefaultProveMemory bytes.
	Budget *Budget
	// Workers decode that many column chunks at once (default
	// GOMAXPROCS), each holding its own page within the budget; the
	// visitor is then called concurrently, but never concurrently for one
	// chunk, whose pages it gets in order.
	Workers int
}

// ProveError is a page, or a chunk, that does not decode or breaks a
// limit: where it is and why. It wraps ErrCorrupt, ErrUnsupported or
// ErrLimit.
type ProveError struct {
	RowGroup int
	Column   string // dotted path in the file's schema
	Page     int    // index of the page in its chunk; -1 for the chunk itself
	Offset   int64  // file offset of the page header (of the chunk for Page -1)
	Err      error
}

func (e *ProveError) Error() string {
	where := fmt.Sprintf("row group %d column %s", e.RowGroup, e.Column)
	if e.Page >= 0 {
		where += fmt.Sprintf(" page %d (byte %d)", e.Page, e.Offset)
	}
	return where + ": " + e.Err.Error()
}

func (e *ProveError) Unwrap() error { return e.Err }

// ProvedPage is one decoded data page, handed to Prove's visitor and
// valid only during the call.
type ProvedPage struct {
	RowGroup int
	// Leaf is the column's index; Node its element in the schema tree.
	Leaf int
	Node *SchemaNode
	// Def and Rep are the page's levels, one per value slot; nil when the
	// column has no such level (Def nil: every slot holds a value).
	Def, Rep []uint8
	// MaxDef is the definition level of a present value.
	MaxDef int
	vals   pageVals
	idx    []int32   // dictionary indexes, one per present value; nil if not dictionary-encoded
	dict   *pageVals // the chunk's dictionary when idx is set
	seen   *[]uint64 // Distinct's scratch bitmap
}

// Len is the number of present (non-null) values.
func (p *ProvedPage) Len() int {
	if p.idx != nil {
		return len(p.idx)
	}
	return p.vals.n
}

// Value returns the i-th present value, plain-encoded as in Parquet
// statistics: little-endian numbers, a boolean as one byte 0 or 1, the
// bytes of a byte array. It aliases the page's buffers.
func (p *ProvedPage) Value(i int) []byte {
	if p.idx != nil {
		return p.dict.value(int(p.idx[i]))
	}
	return p.vals.value(i)
}

// Fixed returns the page's present values as one run of fixed-width
// plain-encoded bytes, when they are (not dictionary-encoded, not byte
// arrays): a caller's typed loop over them beats Value.
func (p *ProvedPage) Fixed() (raw []byte, width int, ok bool) {
	if p.idx != nil || p.vals.width == 0 {
		return nil, 0, false
	}
	return p.vals.fixed, p.vals.width, true
}

// Distinct calls fn with every present value at least once, as Value
// gives it: a dictionary-encoded page's entries once each (those its
// indexes use), any other page's values in order. Enough for bounds.
func (p *ProvedPage) Distinct(fn func([]byte)) {
	if p.idx == nil {
		for i := range p.vals.n {
			fn(p.vals.value(i))
		}
		return
	}
	seen := growExact(*p.seen, (p.dict.n+63)/64)
	clear(seen)
	*p.seen = seen
	for _, x := range p.idx {
		seen[x>>6] |= 1 << (x & 63)
	}
	for w, word := range seen {
		for word != 0 {
			fn(p.dict.value(w*64 + bits.TrailingZeros64(word)))
			word &= word - 1
		}
	}
}

// pageVals are decoded values: fixed-width in fixed, or byte arrays as
// spans (start, end pairs) of data.
type pageVals struct {
	n     int
	width int
	fixed []byte
	data  []byte
	spans []uint32
}

func (v *pageVals) value(i int) []byte {
	if v.width > 0 {
		return v.fixed[i*v.width : (i+1)*v.width]
	}
	return v.data[v.spans[2*i]:v.spans[2*i+1]]
}

// leafShape is what decoding needs of a column.
type leafShape struct {
	node           *SchemaNode
	path           string
	typ            format.Type
	width          int // fixed width of a value; 0 for byte arrays
	maxDef, maxRep int
}

// prover is one proof in progress.
type prover struct {
	ctx    context.Context
	r      io.ReaderAt
	size   int64
	meta   *format.FileMetaData
	budget *Budget
	held   int64
	z      inflater
	visit  func(*ProvedPage) error
	// page buffers, reused from page to page; dict* hold the chunk's
	// dictionary.
	hdr, comp, raw     []byte
	def, rep, bools    []uint8
	idx                []int32
	spans              []uint32
	decoded            []byte
	i32                []int32
	i64                []int64
	f32                []float32
	f64                []float64
	offs               []uint32
	dictComp, dictRaw  []byte
	dictSpans          []uint32
	dict               pageVals
	dictOK             bool
	dictOff, dictCost  int64
	dictHdr            format.PageHeader
	dictHdrLen         int64
	page               ProvedPage
	seen               []uint64
	leaf               *leafShape
	leafIdx, nv        int
	rowGroup, pageNum  int
	pageOff, chunkRows int64
}

// Prove decodes every data page of the file (size bytes read through r,
// whose footer meta passed CheckFooter) and calls visit with each, from
// opts.Workers goroutines (one chunk's pages in order, from one of
// them); a visit error stops the proof and is returned as is. It checks that each
// chunk's pages hold the values its footer declares and as many rows as
// its row group, and that the row groups add up to the file's rows,
// which it returns. Errors of the file itself are *ProveError values.
func Prove(ctx context.Context, r io.ReaderAt, size int64, meta *format.FileMetaData, opts ProveOptions, visit func(*ProvedPage) error) (int64, error) {
	tree, err := BuildSchemaTree(meta.Schema)
	if err != nil {
		return 0, err
	}
	leaves, err := leafShapes(tree)
	if err != nil {
		return 0, err
	}
	var total int64
	for i := range meta.RowGroups {
		rg := &meta.RowGroups[i]
		if len(rg.Columns) != len(leaves) {
			return 0, fmt.Errorf("%w: row group %d has %d column chunks, the schema %d columns", ErrCorrupt, i, len(rg.Columns), len(leaves))
		}
		if rg.NumRows < 0 || total+rg.NumRows < total {
			return 0, fmt.Errorf("%w: row group %d says %d rows", ErrCorrupt, i, rg.NumRows)
		}
		total += rg.NumRows
	}
	if total != meta.NumRows {
		return 0, fmt.Errorf("%w: the row groups hold %d rows, the footer says %d", ErrCorrupt, total, meta.NumRows)
	}
	budget := opts.Budget
	if budget == nil {
		budget = defaultBudget
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(leaves)*len(meta.RowGroups)))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			p := &prover{ctx: ctx, r: r, size: size, meta: meta, budget: budget, visit: visit}
			defer func() {
				p.budget.release(p.held)
				p.z.Close()
			}()
			if errs[w] = p.chunks(leaves, &next); errs[w] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	for _, err := range errs { // the first column's error, not a cancellation it caused
		if err != nil && !errors.Is(err, context.Canceled) {
			return 0, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return total, ctx.Err()
}

// chunks proves chunks taken in turn from next (row group by row group,
// column by column) until none are left.
func (p *prover) chunks(leaves []leafShape, next *atomic.Int64) error {
	n := int64(len(p.meta.RowGroups) * len(leaves))
	for k := next.Add(1) - 1; k < n; k = next.Add(1) - 1 {
		if err := p.ctx.Err(); err != nil {
			return err
		}
		i, j := int(k)/len(leaves), int(k)%len(leaves)
		rg := &p.meta.RowGroups[i]
		p.leaf, p.leafIdx, p.rowGroup = &leaves[j], j, i
		if err := p.chunk(j, &rg.Columns[j]); err != nil {
			return err
		}
		if p.chunkRows != rg.NumRows {
			return p.chunkErr(&rg.Columns[j], fmt.Errorf("%w: its pages hold %d rows, the footer says %d", ErrCorrupt, p.chunkRows, rg.NumRows))
		}
	}
	return nil
}

// leafShapes returns each column's decoding shape.
func leafShapes(t *SchemaTree) ([]leafShape, error) {
	out := make([]leafShape, len(t.Leaves))
	for j, i := range t.Leaves {
		n := &t.Nodes[i]
		l := leafShape{node: n, maxDef: n.MaxDef}
		var names []string
		for k := i; k > 0; k = t.Nodes[k].Parent {
			if t.Nodes[k].Repeated() {
				l.maxRep++
			}
			names = append(names, t.Nodes[k].Name())
		}
		for a, b := 0, len(names)-1; a < b; a, b = a+1, b-1 {
			names[a], names[b] = names[b], names[a]
		}
		l.path = strings.Join(names, ".")
		if !n.Element.Type.Valid {
			return nil, fmt.Errorf("%w: column %s has no physical type", ErrCorrupt, l.path)
		}
		l.typ = n.Element.Type.V
		switch l.typ {
		case format.Boolean:
			l.width = 1
		case format.Int32, format.Float:
			l.width = 4
		case format.Int64, format.Double:
			l.width = 8
		case format.Int96:
			l.width = 12
		case format.FixedLenByteArray:
			if !n.Element.TypeLength.Valid || n.Element.TypeLength.V <= 0 || n.Element.TypeLength.V > 1<<20 {
				return nil, fmt.Errorf("%w: column %s: bad fixed length", ErrCorrupt, l.path)
			}
			l.width = int(n.Element.TypeLength.V)
		}
		if l.maxDef > 255 || l.maxRep > 255 {
			return nil, fmt.Errorf("%w: column %s nests too deep", ErrLimit, l.path)
		}
		out[j] = l
	}
	return out, nil
}

func (p *prover) chunkErr(cc *format.ColumnChunk, err error) error {
	var pe *ProveError
	if errors.As(err, &pe) {
		return err
	}
	return &ProveError{RowGroup: p.rowGroup, Column: p.leaf.path, Page: -1, Offset: cc.MetaData.DataPageOffset, Err: err}
}

func (p *prover) pageErr(err error) error {
	var pe *ProveError
	if errors.As(err, &pe) {
		return err
	}
	return &ProveError{RowGroup: p.rowGroup, Column: p.leaf.path, Page: p.pageNum, Offset: p.pageOff, Err: err}
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// chunk decodes the pages of one column chunk.
func (p *prover) chunk(leaf int, cc *format.ColumnChunk) error {
	md := &cc.MetaData
	if md.Type != p.leaf.typ {
		return p.chunkErr(cc, corruptf("chunk type %v, schema type %v", md.Type, p.leaf.typ))
	}
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
	}
	if start < 4 || md.TotalCompressedSize < 0 || md.TotalCompressedSize > p.size-start {
		return p.chunkErr(cc, corruptf("chunk [%d,+%d) outside a file of %d bytes", start, md.TotalCompressedSize, p.size))
	}
	end := start + md.TotalCompressedSize
	p.dictOK, p.dictCost, p.chunkRows = false, 0, 0
	var values int64
	var h format.PageHeader
	for off, page := start, 0; off < end; page++ {
		p.pageNum, p.pageOff = page, off
		hl, err := p.header(off, end, &h)
		if err != nil {
			return p.pageErr(err)
		}
		if h.CompressedPageSize < 0 || h.UncompressedPageSize < 0 || int64(h.CompressedPageSize) > end-off-hl {
			return p.pageErr(corruptf("page of %d bytes (%d inflated) overruns its chunk", h.CompressedPageSize, h.UncompressedPageSize))
		}
		switch h.Type {
		case format.DictionaryPage:
			if p.dictOK || values > 0 || !h.DictionaryPageHeader.Valid {
				return p.pageErr(corruptf("dictionary page after the first page"))
			}
			p.dictHdr, p.dictHdrLen, p.dictOff = h, hl, off
			if err := p.loadDict(md.Codec); err != nil {
				return p.pageErr(err)
			}
		case format.DataPage, format.DataPageV2:
			n, err := p.dataPage(leaf, md, off, hl, &h, md.NumValues-values)
			if err != nil {
				return p.pageErr(err)
			}
			values += n
		case format.IndexPage:
		default:
			return p.pageErr(corruptf("unknown page type %v", h.Type))
		}
		off += hl + int64(h.CompressedPageSize)
	}
	if values != md.NumValues {
		return p.chunkErr(cc, corruptf("its pages hold %d values, the footer says %d", values, md.NumValues))
	}
	return nil
}

// maxPageHeader bounds an encoded page header (statistics can hold long
// values).
const maxPageHeader = 1 << 20

// header decodes the page header at off (before end) into h and returns
// its length. The header's Thrift is walked with bounds first, so that
// no length in it allocates more than the bytes read.
func (p *prover) header(off, end int64, h *format.PageHeader) (int64, error) {
	for window := int64(4 << 10); ; window *= 16 {
		n := min(window, end-off, maxPageHeader)
		p.hdr = growExact(p.hdr, int(n))
		if err := readFull(p.r, p.hdr, off); err != nil {
			return 0, err
		}
		hl, err := thriftBuf(p.hdr).skipStruct(0, 0, nil)
		if err == nil {
			if _, err := decodePageHeader(p.hdr[:hl], h); err != nil {
				return 0, corruptf("page header: %v", err)
			}
			return int64(hl), nil
		}
		if n == end-off || n == maxPageHeader {
			return 0, corruptf("page header: %v", err)
		}
	}
}

// reserve makes sure the proof holds need bytes of its budget, the
// page's and the dictionary's together; it reports whether it had to
// drop everything first (the dictionary must then be decoded again).
func (p *prover) reserve(need int64) (bool, error) {
	if need > p.budget.limit {
		return false, fmt.Errorf("%w: the page needs %d bytes to decode, over the validation memory limit of %d bytes", ErrLimit, need, p.budget.limit)
	}
	if need <= p.held {
		return false, nil
	}
	if p.budget.tryAcquire(need - p.held) {
		p.held = need
		return false, nil
	}
	p.budget.release(p.held)
	p.held = 0
	p.dropBuffers()
	if err := p.budget.acquire(p.ctx, need); err != nil {
		return true, err
	}
	p.held = need
	return true, nil
}

func (p *prover) dropBuffers() {
	p.comp, p.raw, p.def, p.rep, p.bools, p.idx, p.spans, p.decoded, p.offs = nil, nil, nil, nil, nil, nil, nil, nil, nil
	p.i32, p.i64, p.f32, p.f64 = nil, nil, nil, nil
	p.dictComp, p.dictRaw, p.dictSpans, p.dict = nil, nil, nil, pageVals{}
}

// growExact returns b resized to n, reallocated to exactly n when too
// small (the budget counts declared sizes, not doublings).
func growExact[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// pageCost is what a page costs to decode: its stored and inflated bytes,
// a copy of the values for encodings decoded by parquet-go, and per value
// its levels, offsets and dictionary index.
func pageCost(h *format.PageHeader, numValues int64) int64 {
	return int64(h.CompressedPageSize) + 2*int64(h.UncompressedPageSize) + 16*numValues + 64
}

// loadDict reads and decodes the chunk's dictionary page, within the
// budget (charged for the whole chunk).
func (p *prover) loadDict(codec format.CompressionCodec) error {
	h := &p.dictHdr
	nv := int64(h.DictionaryPageHeader.V.NumValues)
	if nv < 0 {
		return corruptf("dictionary of %d values", nv)
	}
	p.dictCost = int64(h.CompressedPageSize) + int64(h.UncompressedPageSize) + 8*nv + 64
	if _, err := p.reserve(p.dictCost); err != nil {
		return err
	}
	return p.decodeDict(codec)
}

func (p *prover) decodeDict(codec format.CompressionCodec) error {
	h := &p.dictHdr
	p.dictComp = growExact(p.dictComp, int(h.CompressedPageSize))
	if err := readFull(p.r, p.dictComp, p.dictOff+p.dictHdrLen); err != nil {
		return err
	}
	if h.CRC != 0 && int32(crc32.ChecksumIEEE(p.dictComp)) != h.CRC {
		return corruptf("page CRC does not match its bytes")
	}
	p.dictRaw = growExact(p.dictRaw, int(h.UncompressedPageSize))
	raw, err := p.z.inflate(codec, p.dictComp, p.dictRaw)
	if err != nil {
		return err
	}
	//lint:ignore SA1019 Parquet 1.0 writers encode dictionary pages PLAIN_DICTIONARY: still read
	if e := h.DictionaryPageHeader.V.Encoding; e != format.Plain && e != format.PlainDictionary {
		return corruptf("dictionary page encoded %v", e)
	}
	n := int(h.DictionaryPageHeader.V.NumValues)
	p.dict = pageVals{}
	if err := p.plain(&p.dict, raw, n, &p.dictSpans); err != nil {
		return fmt.Errorf("dictionary: %w", err)
	}
	p.dictOK = true
	return nil
}

// plain decodes n PLAIN values from b into v (byte arrays as spans into
// b, kept in *spans).
func (p *prover) plain(v *pageVals, b []byte, n int, spans *[]uint32) error {
	l := p.leaf
	v.n, v.width = n, l.width
	switch {
	case l.typ == format.Boolean:
		if (n+7)/8 > len(b) {
			return corruptf("%d booleans in %d bytes", n, len(b))
		}
		p.bools = growExact(p.bools, n)
		for i := range n {
			p.bools[i] = b[i/8] >> (i % 8) & 1
		}
		v.fixed = p.bools
	case l.width > 0:
		if n > len(b)/l.width {
			return corruptf("%d values of %d bytes in %d bytes", n, l.width, len(b))
		}
		v.fixed = b[:n*l.width]
	default:
		s := growExact(*spans, 2*n)
		pos := 0
		for i := range n {
			if len(b)-pos < 4 {
				return corruptf("value %d of %d overruns the page", i, n)
			}
			k := int(binary.LittleEndian.Uint32(b[pos:]))
			pos += 4
			if k < 0 || k > len(b)-pos {
				return corruptf("value %d of %d bytes overruns the page", i, k)
			}
			s[2*i], s[2*i+1] = uint32(pos), uint32(pos+k)
			pos += k
		}
		*spans, v.data, v.spans = s, b, s
	}
	return nil
}

// dataPage decodes one data page (v1 or v2) whose header h (hl bytes) is
// at off, of at most left values, hands it to the visitor and returns
// its number of values.
func (p *prover) dataPage(leaf int, md *format.ColumnMetaData, off, hl int64, h *format.PageHeader, left int64) (int64, error) {
	var nv int64
	if h.Type == format.DataPage {
		if !h.DataPageHeader.Valid {
			return 0, corruptf("data page without its header")
		}
		nv = int64(h.DataPageHeader.V.NumValues)
	} else {
		if !h.DataPageHeaderV2.Valid {
			return 0, corruptf("data page v2 without its header")
		}
		nv = int64(h.DataPageHeaderV2.V.NumValues)
	}
	if nv < 0 || nv > left {
		return 0, corruptf("page of %d values, %d left in the chunk", nv, left)
	}
	for extra := int64(0); ; {
		err := p.decodePage(md, off, hl, h, int(nv), extra)
		var more needMore
		if errors.As(err, &more) && extra == 0 {
			extra = int64(more)
			continue
		}
		if err != nil {
			return 0, err
		}
		break
	}
	p.chunkRows += p.pageRows(int(nv))
	if err := p.visit(&p.page); err != nil {
		return 0, err
	}
	return nv, nil
}

// needMore is a page whose values decode to more bytes than its cost
// covers (DELTA_BYTE_ARRAY shares prefixes): the page is decoded again
// with that many bytes more reserved.
type needMore int64

func (n needMore) Error() string { return fmt.Sprintf("page values need %d more bytes", int64(n)) }

// decodePage reads, inflates and decodes a data page with its cost and
// extra bytes reserved.
func (p *prover) decodePage(md *format.ColumnMetaData, off, hl int64, h *format.PageHeader, nv int, extra int64) error {
	dropped, err := p.reserve(pageCost(h, int64(nv)) + p.dictCost + extra)
	if err != nil {
		return err
	}
	if dropped && p.dictOK {
		if err := p.decodeDict(md.Codec); err != nil {
			return err
		}
	}
	p.comp = growExact(p.comp, int(h.CompressedPageSize))
	if err := readFull(p.r, p.comp, off+hl); err != nil {
		return err
	}
	if h.CRC != 0 && int32(crc32.ChecksumIEEE(p.comp)) != h.CRC {
		return corruptf("page CRC does not match its bytes")
	}
	var vals []byte
	var enc format.Encoding
	if h.Type == format.DataPage {
		vals, enc, err = p.splitV1(md.Codec, h, nv)
	} else {
		vals, enc, err = p.splitV2(md.Codec, h, nv)
	}
	if err != nil {
		return err
	}
	return p.values(vals, enc, nv, int64(h.UncompressedPageSize)+extra)
}

// splitV1 inflates a v1 page and decodes its levels; it returns the
// values section.
func (p *prover) splitV1(codec format.CompressionCodec, h *format.PageHeader, n int) ([]byte, format.Encoding, error) {
	v := &h.DataPageHeader.V
	p.raw = growExact(p.raw, int(h.UncompressedPageSize))
	raw, err := p.z.inflate(codec, p.comp, p.raw)
	if err != nil {
		return nil, 0, err
	}
	section := func(enc format.Encoding) ([]byte, error) {
		if enc != format.RLE {
			return nil, fmt.Errorf("%w: %v levels", ErrUnsupported, enc)
		}
		if len(raw) < 4 || int64(binary.LittleEndian.Uint32(raw)) > int64(len(raw)-4) {
			return nil, corruptf("levels overrun the page")
		}
		k := 4 + int(binary.LittleEndian.Uint32(raw))
		s := raw[4:k]
		raw = raw[k:]
		return s, nil
	}
	var rep, def []byte
	if p.leaf.maxRep > 0 {
		if rep, err = section(v.RepetitionLevelEncoding); err != nil {
			return nil, 0, err
		}
	}
	if p.leaf.maxDef > 0 {
		if def, err = section(v.DefinitionLevelEncoding); err != nil {
			return nil, 0, err
		}
	}
	if err := p.levels(rep, def, n); err != nil {
		return nil, 0, err
	}
	return raw, v.Encoding, nil
}

// splitV2 decodes a v2 page's (never compressed) levels and inflates its
// values section.
func (p *prover) splitV2(codec format.CompressionCodec, h *format.PageHeader, n int) ([]byte, format.Encoding, error) {
	v := &h.DataPageHeaderV2.V
	rl, dl := int64(v.RepetitionLevelsByteLength), int64(v.DefinitionLevelsByteLength)
	if rl < 0 || dl < 0 || rl+dl > int64(len(p.comp)) || rl+dl > int64(h.UncompressedPageSize) {
		return nil, 0, corruptf("levels of %d+%d bytes overrun the page", rl, dl)
	}
	var rep, def []byte
	if p.leaf.maxRep > 0 {
		rep = p.comp[:rl]
	}
	if p.leaf.maxDef > 0 {
		def = p.comp[rl : rl+dl]
	}
	if err := p.levels(rep, def, n); err != nil {
		return nil, 0, err
	}
	if int(v.NumNulls) != n-p.nonNull() {
		return nil, 0, corruptf("header says %d nulls, the levels %d", v.NumNulls, n-p.nonNull())
	}
	if int64(v.NumRows) != p.pageRows(n) {
		return nil, 0, corruptf("header says %d rows, the levels %d", v.NumRows, p.pageRows(n))
	}
	body, size := p.comp[rl+dl:], int(int64(h.UncompressedPageSize)-rl-dl)
	if v.IsCompressed.Valid && !v.IsCompressed.V {
		codec = format.Uncompressed
	}
	p.raw = growExact(p.raw, size)
	vals, err := p.z.inflate(codec, body, p.raw)
	return vals, v.Encoding, err
}

// levels decodes n repetition and definition levels (nil sections: the
// column has none) into the page.
func (p *prover) levels(rep, def []byte, n int) error {
	l := p.leaf
	p.page = ProvedPage{RowGroup: p.rowGroup, Leaf: p.leafIdx, Node: l.node, MaxDef: l.maxDef, seen: &p.seen}
	p.nv = n
	if l.maxRep > 0 {
		lv, err := decodeHybrid(p.rep[:0], rep, levelWidth(l.maxRep), n)
		p.rep = lv
		if err != nil {
			return corruptf("repetition levels: %v", err)
		}
		for _, x := range lv {
			if int(x) > l.maxRep {
				return corruptf("repetition level %d above %d", x, l.maxRep)
			}
		}
		p.page.Rep = lv
	}
	if l.maxDef > 0 {
		lv, err := decodeHybrid(p.def[:0], def, levelWidth(l.maxDef), n)
		p.def = lv
		if err != nil {
			return corruptf("definition levels: %v", err)
		}
		for _, x := range lv {
			if int(x) > l.maxDef {
				return corruptf("definition level %d above %d", x, l.maxDef)
			}
		}
		p.page.Def = lv
	}
	return nil
}

// nonNull counts the page's present values.
func (p *prover) nonNull() int {
	if p.page.Def == nil {
		return p.nv
	}
	k := 0
	m := uint8(p.leaf.maxDef)
	for _, x := range p.page.Def {
		if x == m {
			k++
		}
	}
	return k
}

// pageRows counts the rows the page's n values start.
func (p *prover) pageRows(n int) int64 {
	if p.page.Rep == nil {
		return int64(n)
	}
	k := int64(0)
	for _, x := range p.page.Rep {
		if x == 0 {
			k++
		}
	}
	return k
}
