package pqfile

import (
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"sync"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// A mount that serves partition values in files (a Shape whose constants are a file's only
// change) rewrites the footer of every file of a snapshot, and a listing's stats wait for
// those rewrites. Decoding a footer with parquet-go and encoding it again costs ten times what
// editing its encoded bytes does (BenchmarkSplicedPlan). So such a file is laid out by splicing:
// the source's bytes up to its footer, the made-up chunks of every row group (as the decoded
// path lays them out), and the source footer with, inserted at their places, the constants'
// schema elements, column chunks and column orders; the root's child count and each row
// group's byte totals grown by theirs; the page index references of the source's chunks left
// out (readers take every column's page index or none, and made-up chunks have none); and the
// key values that embed a schema (Arrow's, Spark's) left out, as they would describe other
// columns. Every other byte of the footer is the source's. A file the splice does not take (a
// footer over the first read, encrypted, not exactly the shape's other columns, or anything it
// does not expect) goes the decoded way, which serves it or says why not.

// spliced is the output of a Plan laid out by splicing.
type spliced struct {
	gen  []byte // the made-up chunks of every row group, in order
	tail []byte // the output footer, its length and the magic
}

// Field ids the splice reads or edits, as tagged in parquet-go's format package.
const (
	idFileKeyValues        = 5 // FileMetaData.key_value_metadata: list<KeyValue>
	idFileColumnOrders     = 7 // FileMetaData.column_orders: list<ColumnOrder>
	idFileEncryption       = 8 // FileMetaData.encryption_algorithm
	idFileSigningKey       = 9 // FileMetaData.footer_signing_key_metadata
	idRowGroupBytes        = 2 // RowGroup.total_byte_size: i64
	idRowGroupCompressed   = 6 // RowGroup.total_compressed_size: i64
	idChunkFilePath        = 1 // ColumnChunk.file_path: a chunk in another file
	idChunkOffsetIndexOff  = 4 // ColumnChunk.offset_index_offset; 5 to 7 are the other page index references
	idChunkColumnIndexLen  = 7
	idChunkCryptoMetadata  = 8 // ColumnChunk.crypto_metadata
	idChunkEncryptedFields = 9 // ColumnChunk.encrypted_column_metadata
	idKeyValueKey          = 1 // KeyValue.key
)

// typeDefinedOrder is a ColumnOrder holding TYPE_ORDER, encoded: a made-up leaf's order.
var typeDefinedOrder = func() []byte {
	b, err := thrift.Marshal(new(thrift.CompactProtocol), &format.ColumnOrder{Value: &format.TypeDefinedOrder{}})
	if err != nil {
		panic(err)
	}
	return b
}()

// newSplicedPlan returns the plan of src (size bytes, nothing deleted or renamed) served in
// shape, laid out by splicing, or nil when the splice does not take the file (see above).
func newSplicedPlan(src io.ReaderAt, size int64, shape *Shape, memo *ShapeMemo) *Plan {
	if shape == nil || !slices.ContainsFunc(shape.Columns, func(c ShapeColumn) bool { return c.Const != nil }) ||
		size < int64(len(magic))+trailerLen {
		return nil
	}
	bp := tailBufs.Get().(*[]byte)
	defer tailBufs.Put(bp)
	tail := (*bp)[:min(size, tailGuess)]
	if readFull(src, tail, size-int64(len(tail))) != nil {
		return nil
	}
	trailer := tail[len(tail)-trailerLen:]
	n := int64(binary.LittleEndian.Uint32(trailer[:4]))
	start := size - trailerLen - n
	if string(trailer[4:]) != magic || n > int64(len(tail))-trailerLen || start < int64(len(magic)) ||
		n > CurrentLimits().MaxFooterBytes {
		return nil
	}
	var head [len(magic)]byte
	if size <= int64(len(tail)) {
		copy(head[:], tail)
	} else if readFull(src, head[:], 0) != nil {
		return nil
	}
	if string(head[:]) != magic {
		return nil
	}
	foot := tail[int64(len(tail))-trailerLen-n : len(tail)-trailerLen]
	out, rows, groups, ok := spliceConstants(foot, start, shape, memo)
	if !ok {
		return nil
	}
	return &Plan{src: src, size: size, footStart: start, footerOnly: true, liveRows: rows,
		groups: make([]group, groups), spliced: out}
}

// SplicedSize returns the size of src (size bytes, nothing deleted or renamed) served in shape
// when the splice takes it, without keeping the layout: a listing's stat needs the size alone,
// and most listed files are never opened (their layout, spliced the same way, comes at the
// first open). ok is false when the splice does not take the file; NewShapedPlan then decides
// how it is served.
func SplicedSize(src io.ReaderAt, size int64, shape *Shape) (n int64, ok bool) {
	if noSplice.Load() {
		return 0, false
	}
	p := newSplicedPlan(src, size, shape, spliceMemo)
	if p == nil {
		return 0, false
	}
	return p.Size()
}

// spliceConstants returns the output of the source footer foot (thrift bytes), whose first byte
// is at footStart, served in shape, with the file's row count and row group count; ok is false
// when the splice does not take it. foot is not kept.
func spliceConstants(foot []byte, footStart int64, shape *Shape, memo *ShapeMemo) (out *spliced, rows int64, groups int, ok bool) {
	b := thriftBuf(foot)
	sp := &splicer{foot: b, footStart: footStart, out: &spliced{}}
	sp.fields = sp.fieldsBuf[:0]
	var err error
	if sp.cols, err = spliceColumns(shape); err != nil {
		return nil, 0, 0, false
	}
	for _, c := range sp.cols {
		if c.tmpl != nil {
			sp.consts++
		}
	}
	// One pass: the schema comes before the row groups in every writer's footer (the field
	// order), so the row groups are spliced as they are walked.
	var ssBuf [8]splice // a footer's splices: schema, key values, orders, row groups
	ss := ssBuf[:0]
	var seen uint64
	end, err := b.skipStruct(0, 0, func(f tfield, depth int) (int, error) {
		if f.id < 0 || f.id >= 64 {
			return -1, nil
		}
		if seen&(1<<f.id) != 0 {
			return 0, errSpliceSkip // hostile: a decoder would take the last copy
		}
		seen |= 1 << f.id
		var with []byte
		end, ok := -1, true
		switch f.id {
		case idFileEncryption, idFileSigningKey:
			return 0, errSpliceSkip
		case idFileNumRows:
			if f.typ != tI64 {
				return 0, errSpliceSkip
			}
			v, end, err := b.uvarint(f.value)
			rows = zigzag(v)
			return end, err
		case idFileSchema, idFileKeyValues, idFileColumnOrders:
			if f.typ != tList || (f.id == idFileColumnOrders && seen&(1<<idFileSchema) == 0) {
				return 0, errSpliceSkip // orders are placed by the schema's leaves
			}
			if end, err = b.skip(f.value, f.typ, depth); err != nil {
				return 0, err
			}
			f.end = end
			switch f.id {
			case idFileSchema:
				if !sourceIsRest(foot[f.value:end], shape, memo) {
					return 0, errSpliceSkip
				}
				if sp.src, ok = b.topColumns(&f); ok && len(sp.src.cols) != len(sp.cols)-sp.consts {
					ok = false // the row groups' chunks are matched to these columns
				}
				if ok {
					with = sp.schema()
				}
			case idFileKeyValues:
				with, ok = b.withoutSchemaKeys(&f)
			case idFileColumnOrders:
				with, ok = sp.orders(&f)
			}
		case idFileRowGroups:
			if f.typ != tList || seen&(1<<idFileSchema) == 0 {
				return 0, errSpliceSkip
			}
			with, groups, end, ok = sp.rowGroups(f.value)
		default:
			return -1, nil
		}
		if !ok {
			return 0, errSpliceSkip
		}
		ss = append(ss, splice{start: f.value, end: end, with: with})
		return end, nil
	})
	const needed = 1<<idFileSchema | 1<<idFileRowGroups | 1<<idFileNumRows
	if err != nil || end != len(foot) || seen&needed != needed || rows < 0 {
		return nil, 0, 0, false // trailing bytes: a signed (encrypted mode) footer
	}
	t := applySplices(foot, ss)
	t = binary.LittleEndian.AppendUint32(t, uint32(len(t)))
	sp.out.tail = append(t, magic...)
	return sp.out, rows, groups, true
}

// errSpliceSkip stops a walk the splice does not take.
var errSpliceSkip = errors.New("pqfile: not spliced")

// splicer is one footer being spliced.
type splicer struct {
	foot      thriftBuf
	footStart int64
	cols      []spliceColumn
	consts    int
	src       sourceSchema
	fields    []tfield // scratch: a chunk's fields
	fieldsBuf [16]tfield
	drops     []splice // scratch: a chunk's page index references left out
	out       *spliced
}

// spliceColumn is one column of the output: a source column (tmpl nil), or a constant.
type spliceColumn struct {
	tmpl  *spliceTemplate
	value []byte // the constant's PLAIN value, nil for null
}

// spliceTemplate is what a constant column splices into any file: its schema element encoded,
// its leaf (value unset) and its path, checked as the decoded path checks a constant (one
// optional leaf of a physical type).
type spliceTemplate struct {
	el   []byte
	gen  genLeaf
	path []string
}

// spliceTemplates are the templates of the constants of shapes with a Key, by key and column
// index.
var spliceTemplates = newBoundedMemo[templateKey, *spliceTemplate](4096)

type templateKey struct {
	shape string
	col   int
}

// boundedMemo is a map of at most max entries, cleared when full, safe for concurrent use.
type boundedMemo[K comparable, V any] struct {
	mu  sync.Mutex
	m   map[K]V // guarded by mu
	max int
}

func newBoundedMemo[K comparable, V any](max int) *boundedMemo[K, V] {
	return &boundedMemo[K, V]{m: map[K]V{}, max: max}
}

func (b *boundedMemo[K, V]) get(k K) (V, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[k]
	return v, ok
}

func (b *boundedMemo[K, V]) put(k K, v V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.m) >= b.max {
		clear(b.m)
	}
	b.m[k] = v
}

// spliceColumns returns the output's columns for shape.
func spliceColumns(shape *Shape) ([]spliceColumn, error) {
	cols := make([]spliceColumn, len(shape.Columns))
	for i, c := range shape.Columns {
		if c.Const == nil {
			continue
		}
		t, err := constTemplate(shape, i)
		if err != nil {
			return nil, err
		}
		cols[i].tmpl = t
		if !c.Const.Null {
			cols[i].value = c.Const.Plain
		}
	}
	return cols, nil
}

// constTemplate returns the template of shape's constant column i.
func constTemplate(shape *Shape, i int) (*spliceTemplate, error) {
	key := templateKey{shape.Key, i}
	if shape.Key != "" {
		if t, ok := spliceTemplates.get(key); ok {
			return t, nil
		}
	}
	var sh shaping
	if err := sh.addMadeUp(shape.Columns[i]); err != nil {
		return nil, err
	}
	el, err := thrift.Marshal(new(thrift.CompactProtocol), &sh.schema[0])
	if err != nil {
		return nil, err
	}
	t := &spliceTemplate{el: el, gen: *sh.leaves[0].gen, path: sh.leaves[0].path}
	t.gen.value = nil
	if shape.Key != "" {
		spliceTemplates.put(key, t)
	}
	return t, nil
}

// madeUp is a constant's chunk for a row group of some rows, wherever it goes: its pages and
// its metadata, with offsets from the pages' start.
type madeUp struct {
	pages   []byte
	dictLen int64 // the dictionary page's bytes; 0: no dictionary
	md      format.ColumnMetaData
}

type madeUpKey struct {
	t     *spliceTemplate
	value string
	rows  int64
}

// madeUps remembers made-up chunks: the files of a partition hold one value, and often the same
// number of rows.
var madeUps = newBoundedMemo[madeUpKey, *madeUp](4096)

// madeUpChunk returns the chunk of the constant c for rows rows.
func madeUpChunk(c spliceColumn, rows int64) (*madeUp, error) {
	k := madeUpKey{c.tmpl, string(c.value), rows}
	if m, ok := madeUps.get(k); ok {
		return m, nil
	}
	g := c.tmpl.gen
	g.value = c.value
	cc, pages, err := g.chunk(nil, 0, rows)
	if err != nil {
		return nil, err
	}
	m := &madeUp{pages: pages, md: cc.MetaData}
	if g.value != nil && g.el.Type.V != format.Boolean {
		m.dictLen = cc.MetaData.DataPageOffset
	}
	madeUps.put(k, m)
	return m, nil
}

// appendChunk appends the encoded ColumnChunk of m placed at pos, whose leaf's path is path:
// the fields genLeaf.chunk sets, and null_count always.
func (m *madeUp) appendChunk(dst []byte, path []string, pos int64) []byte {
	md := &m.md
	dst = appendZigzag(append(dst, 2<<4|tI64), pos)            // 2: file_offset
	dst = append(dst, 1<<4|tStruct)                            // 3: meta_data
	dst = appendZigzag(append(dst, 1<<4|tI32), int64(md.Type)) // 1: type
	dst = appendListHeader(append(dst, 1<<4|tList), tI32, len(md.Encoding))
	for _, e := range md.Encoding {
		dst = appendZigzag(dst, int64(e))
	}
	dst = appendListHeader(append(dst, 1<<4|tList), tBinary, len(path))
	for _, p := range path {
		dst = append(binary.AppendUvarint(dst, uint64(len(p))), p...)
	}
	dst = appendZigzag(append(dst, 1<<4|tI32), int64(md.Codec))
	dst = appendZigzag(append(dst, 1<<4|tI64), md.NumValues)
	dst = appendZigzag(append(dst, 1<<4|tI64), md.TotalUncompressedSize)
	dst = appendZigzag(append(dst, 1<<4|tI64), md.TotalCompressedSize)
	dst = appendZigzag(append(dst, 2<<4|tI64), pos+md.DataPageOffset) // 9: data_page_offset
	prev := 9
	if m.dictLen > 0 {
		dst = appendZigzag(append(dst, 2<<4|tI64), pos) // 11: dictionary_page_offset
		prev = 11
	}
	st := &md.Statistics
	dst = append(dst, byte(12-prev)<<4|tStruct)              // 12: statistics
	dst = appendZigzag(append(dst, 3<<4|tI64), st.NullCount) // 3: null_count
	if st.MaxValue != nil {
		dst = append(binary.AppendUvarint(append(dst, 2<<4|tBinary), uint64(len(st.MaxValue))), st.MaxValue...) // 5
		dst = append(binary.AppendUvarint(append(dst, 1<<4|tBinary), uint64(len(st.MinValue))), st.MinValue...) // 6
	}
	return append(dst, tStop, tStop, tStop)
}

// sourceIsRest reports whether the encoded schema list raw has exactly shape's columns that are
// not constants, in order, each as the shape gives it or served as stored (ShapeNeeded's rules),
// remembered in memo under shape's Key.
func sourceIsRest(raw []byte, shape *Shape, memo *ShapeMemo) bool {
	key := ""
	if memo != nil && shape.Key != "" {
		key = "splice\x00" + shape.Key
		if rw, ok := memo.get(key, raw); ok {
			return !rw
		}
	}
	rest := &Shape{}
	for _, c := range shape.Columns {
		if c.Const == nil {
			rest.Columns = append(rest.Columns, c)
		}
	}
	rw, err := shapeNeededFor(raw, rest)
	if err != nil {
		return false
	}
	if key != "" {
		memo.put(key, raw, rw)
	}
	return !rw
}

// sourceSchema is where the parts of an encoded source schema list are.
type sourceSchema struct {
	elems     int // elements in the list
	rootStart int // the root element's bytes
	rootEnd   int
	children  tfield      // the root's num_children field
	cols      []topColumn // the root's children, in order
	leaves    int         // leaves in all
}

// topColumn is one top-level column of the source schema: its elements' bytes and its leaves.
type topColumn struct {
	start, end int
	leaves     int
}

// topColumns finds the top-level columns of the schema list field f.
func (b thriftBuf) topColumns(f *tfield) (sourceSchema, bool) {
	var s sourceSchema
	typ, n, off, err := b.listHeader(f.value)
	if err != nil || typ != tStruct || n < 1 {
		return s, false
	}
	s.elems, s.rootStart = n, off
	kids := func(off int) (int64, int, tfield, error) {
		k, kf := int64(0), tfield{}
		end, err := b.skipStruct(off, 1, func(ef tfield, _ int) (int, error) {
			if ef.id != idSchemaNumChild || ef.typ != tI32 {
				return -1, nil
			}
			v, end, err := b.uvarint(ef.value)
			k, kf = zigzag(v), ef
			kf.end = end
			return end, err
		})
		return k, end, kf, err
	}
	rootKids, off, kf, err := kids(off)
	if err != nil || kf.end == 0 || rootKids < 0 || rootKids > int64(n) {
		return s, false
	}
	s.rootEnd, s.children = off, kf
	el := 1
	for range rootKids {
		c := topColumn{start: off}
		for pending := 1; pending > 0; pending-- {
			if el >= n {
				return s, false
			}
			k, end, _, err := kids(off)
			if err != nil || k < 0 || k > int64(n-el) {
				return s, false
			}
			if k == 0 {
				c.leaves++
			}
			pending += int(k)
			off, el = end, el+1
		}
		c.end = off
		s.cols = append(s.cols, c)
		s.leaves += c.leaves
	}
	return s, el == n && off == f.end
}

// schema returns the output's schema list: the root with its new child count, then the source's
// columns and the constants' elements in the output's order.
func (sp *splicer) schema() []byte {
	s, foot := &sp.src, sp.foot
	n := s.rootEnd - s.rootStart + 16
	for _, c := range sp.cols {
		if c.tmpl != nil {
			n += len(c.tmpl.el)
		}
	}
	for _, c := range s.cols {
		n += c.end - c.start
	}
	out := appendListHeader(make([]byte, 0, n), tStruct, s.elems+sp.consts)
	out = append(out, foot[s.rootStart:s.children.value]...)
	out = appendZigzag(out, int64(len(s.cols)+sp.consts))
	out = append(out, foot[s.children.end:s.rootEnd]...)
	j := 0
	for _, c := range sp.cols {
		if c.tmpl != nil {
			out = append(out, c.tmpl.el...)
			continue
		}
		out = append(out, foot[s.cols[j].start:s.cols[j].end]...)
		j++
	}
	return out
}

// rowGroups returns the output's row group list for the source list at off, appending the
// made-up chunks to the output, the number of row groups and the offset after the list.
func (sp *splicer) rowGroups(off int) ([]byte, int, int, bool) {
	b := sp.foot
	typ, n, off, err := b.listHeader(off)
	if err != nil || (n > 0 && typ != tStruct) {
		return nil, 0, 0, false
	}
	list := appendListHeader(make([]byte, 0, len(b)-off+n*64*sp.consts), tStruct, n)
	for range n {
		var rg [idRowGroupCompressed + 1]tfield
		var seen uint64
		end, err := b.skipStruct(off, 1, func(rf tfield, depth int) (int, error) {
			if rf.id < 0 || rf.id >= 64 {
				return -1, nil
			}
			if seen&(1<<rf.id) != 0 {
				return 0, errSpliceSkip
			}
			seen |= 1 << rf.id
			if rf.id >= int16(len(rg)) {
				return -1, nil
			}
			end, err := b.skip(rf.value, rf.typ, depth)
			rf.end = end
			rg[rf.id] = rf
			return end, err
		})
		if err != nil || seen&(1<<idRowGroupColumns|1<<idRowGroupNumRows) != 1<<idRowGroupColumns|1<<idRowGroupNumRows ||
			rg[idRowGroupColumns].typ != tList || rg[idRowGroupNumRows].typ != tI64 {
			return nil, 0, 0, false
		}
		v, _, _ := b.uvarint(rg[idRowGroupNumRows].value)
		rows := zigzag(v)
		if rows < 0 {
			return nil, 0, 0, false
		}
		cols := &rg[idRowGroupColumns]
		chunks, addBytes, addCompressed, ok := sp.chunks(cols, rows)
		if !ok {
			return nil, 0, 0, false
		}
		ss := make([]splice, 0, 3)
		for id := range rg {
			rf := &rg[id]
			if seen&(1<<id) == 0 {
				continue
			}
			switch {
			case id == idRowGroupColumns:
				ss = append(ss, splice{start: rf.value, end: rf.end, with: chunks})
			case (id == idRowGroupBytes || id == idRowGroupCompressed) && rf.typ == tI64:
				v, _, _ := b.uvarint(rf.value)
				add := addBytes
				if id == idRowGroupCompressed {
					add = addCompressed
				}
				ss = append(ss, splice{start: rf.value, end: rf.end, with: appendZigzag(nil, zigzag(v)+add)})
			}
		}
		slices.SortFunc(ss, func(x, y splice) int { return x.start - y.start })
		list = appendSpliced(list, b, off, end, ss)
		off = end
	}
	return list, n, off, true
}

// chunks returns a row group's output column list from the source list field f, the row group
// having rows rows: the source chunks without their page index references, and the constants'
// made-up chunks (their bytes appended to the output), and the bytes the latter add,
// uncompressed and compressed.
func (sp *splicer) chunks(f *tfield, rows int64) ([]byte, int64, int64, bool) {
	b := sp.foot
	typ, n, off, err := b.listHeader(f.value)
	if err != nil || n != sp.src.leaves || (n > 0 && typ != tStruct) {
		return nil, 0, 0, false
	}
	list := appendListHeader(make([]byte, 0, f.end-f.value+64*sp.consts), tStruct, n+sp.consts)
	var addBytes, addCompressed int64
	j := 0
	for _, c := range sp.cols {
		if c.tmpl != nil {
			m, err := madeUpChunk(c, rows)
			if err != nil {
				return nil, 0, 0, false
			}
			list = m.appendChunk(list, c.tmpl.path, sp.footStart+int64(len(sp.out.gen)))
			sp.out.gen = append(sp.out.gen, m.pages...)
			addBytes += m.md.TotalUncompressedSize
			addCompressed += m.md.TotalCompressedSize
			continue
		}
		for range sp.src.cols[j].leaves {
			var end int
			sp.fields, end, err = b.structFields(sp.fields[:0], true, off, 2, nil)
			if err != nil {
				return nil, 0, 0, false
			}
			hasMeta := false
			for _, cf := range sp.fields {
				switch cf.id {
				case idChunkFilePath, idChunkCryptoMetadata, idChunkEncryptedFields:
					return nil, 0, 0, false
				case idChunkMetaData:
					hasMeta = cf.typ == tStruct
				}
			}
			if !hasMeta {
				return nil, 0, 0, false
			}
			sp.drops = dropFields(sp.drops[:0], sp.fields, isPageIndexRef)
			list = appendSpliced(list, b, off, end, sp.drops)
			off = end
		}
		j++
	}
	return list, addBytes, addCompressed, off == f.end
}

// isPageIndexRef reports whether a ColumnChunk field points at a page index.
func isPageIndexRef(f tfield) bool {
	return f.id >= idChunkOffsetIndexOff && f.id <= idChunkColumnIndexLen
}

// withoutSchemaKeys returns the key value list field f without the keys that embed a schema.
func (b thriftBuf) withoutSchemaKeys(f *tfield) ([]byte, bool) {
	typ, n, off, err := b.listHeader(f.value)
	if err != nil || (n > 0 && typ != tStruct) {
		return nil, false
	}
	list := appendListHeader(nil, tStruct, n) // rewritten below if a key goes
	kept := 0
	for range n {
		var key []byte
		end, err := b.skipStruct(off, 1, func(kf tfield, _ int) (int, error) {
			if kf.id != idKeyValueKey || kf.typ != tBinary {
				return -1, nil
			}
			l, start, err := b.uvarint(kf.value)
			if err != nil || l > uint64(len(b)-start) {
				return 0, thriftCorrupt("key of %d bytes at %d", l, kf.value)
			}
			key = b[start : start+int(l)]
			return start + int(l), nil
		})
		if err != nil {
			return nil, false
		}
		if k := string(key); k != arrowSchemaKey && k != sparkSchemaKey {
			list = append(list, b[off:end]...)
			kept++
		}
		off = end
	}
	if kept != n {
		hdr := appendListHeader(nil, tStruct, n)
		list = append(appendListHeader(nil, tStruct, kept), list[len(hdr):]...)
	}
	return list, off == f.end
}

// orders returns the column order list field f with type-defined orders for the constants'
// leaves at their places.
func (sp *splicer) orders(f *tfield) ([]byte, bool) {
	b := sp.foot
	typ, n, off, err := b.listHeader(f.value)
	if err != nil || n != sp.src.leaves || (n > 0 && typ != tStruct) {
		return nil, false
	}
	list := appendListHeader(make([]byte, 0, f.end-f.value+4+sp.consts*len(typeDefinedOrder)), tStruct, n+sp.consts)
	j := 0
	for _, c := range sp.cols {
		if c.tmpl != nil {
			list = append(list, typeDefinedOrder...)
			continue
		}
		start := off
		for range sp.src.cols[j].leaves {
			if off, err = b.skipStruct(off, 1, nil); err != nil {
				return nil, false
			}
		}
		list = append(list, b[start:off]...)
		j++
	}
	return list, off == f.end
}

// appendSpliced appends b[start:end] with the splices ss (sorted, inside the range) applied.
func appendSpliced(dst []byte, b thriftBuf, start, end int, ss []splice) []byte {
	pos := start
	for _, s := range ss {
		dst = append(dst, b[pos:s.start]...)
		dst = append(dst, s.with...)
		pos = s.end
	}
	return append(dst, b[pos:end]...)
}

// appendListHeader appends the compact header of a list of n elements of type typ.
func appendListHeader(dst []byte, typ byte, n int) []byte {
	if n < 15 {
		return append(dst, byte(n)<<4|typ)
	}
	return binary.AppendUvarint(append(dst, 0xf0|typ), uint64(n))
}

// appendZigzag appends v as a compact i32 or i64.
func appendZigzag(dst []byte, v int64) []byte {
	return binary.AppendUvarint(dst, uint64(v<<1^v>>63))
}

// zigzag decodes a compact i32 or i64.
func zigzag(v uint64) int64 { return int64(v>>1) ^ -int64(v&1) }
