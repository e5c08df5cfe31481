package pqfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Shape is the schema a rewritten file is served in: its top-level columns, in order. Each is
// taken from the source by name (after a Rename), or, when the source lacks it, made up as
// all nulls; a column may instead hold one constant in every row (a partition value). Source
// columns the shape does not name are left out. A source column is served with its own schema
// elements, except that a leaf may widen its annotation within the same physical type (an
// INT(8) served as INT(32), a DECIMAL(5,2) as DECIMAL(7,2) in INT32): nothing but the footer
// changes for it. A source column whose type differs otherwise is served as stored.
//
// Made-up column chunks are a few bytes per row group (one page whose levels are a single
// run), so a reshaped file costs its footer and those bytes, whatever its size.
type Shape struct {
	// Columns are the output's top-level columns.
	Columns []ShapeColumn
	// Key, when set, identifies the shape for a ShapeMemo: two shapes with one Key must be
	// equal but for their constants' values (which columns are constant is part of the key).
	Key string
}

// ShapeColumn is one top-level column of a Shape.
type ShapeColumn struct {
	// Name is the column's name.
	Name string
	// Schema is the column's subtree as the output schema gives it, depth first: Schema[0] is
	// the column, with NumChildren set on groups. It is used for a column the source lacks,
	// and for the types a source column widens to. Empty when the caller has no Parquet form
	// for the column's type: a source column of that name is then served as stored, and a
	// source without one cannot be served (ErrUnsupported).
	Schema []format.SchemaElement
	// Const, when set, makes the column a constant: Schema must be one optional leaf, and every
	// row holds Const's value (or null), even where the source has a column of that name.
	Const *Constant
}

// Constant is the value of a constant column: Null, or Plain, the value PLAIN-encoded for the
// leaf's physical type (for BYTE_ARRAY the bytes alone, without the length prefix; for BOOLEAN
// one byte, 0 or 1).
type Constant struct {
	Null  bool
	Plain []byte
}

// outLeaf is one leaf column of a reshaped output: a source column chunk (src >= 0) or one made
// up for every row group (gen).
type outLeaf struct {
	src  int
	gen  *genLeaf
	conv *convLeaf // a source leaf served converted to a wider type
	path []string
}

// genLeaf is a made-up leaf: its schema element, its levels' maxima and its constant (nil: all
// values null at the top).
type genLeaf struct {
	el             format.SchemaElement
	maxDef, maxRep int
	value          []byte // PLAIN value, nil for null
}

// shaping is a Plan's reshaping of its output: the output schema and leaves.
type shaping struct {
	schema    []format.SchemaElement
	leaves    []outLeaf
	orders    []format.ColumnOrder // nil when the source had none
	converted bool                 // some leaf is converted: the output's size is known once encoded
}

// applyShape computes the reshaping of meta (renamed) to s, or nil when the source already has
// exactly s's columns in s's order and nothing is constant or widened.
func applyShape(meta *format.FileMetaData, t *SchemaTree, s *Shape) (*shaping, error) {
	if s == nil {
		return nil, nil
	}
	root := t.Root()
	out := &shaping{schema: []format.SchemaElement{meta.Schema[0]}}
	out.schema[0].NumChildren = thrift.New(int32(len(s.Columns)))
	identity := len(s.Columns) == len(root.Children)
	for i, c := range s.Columns {
		name := c.Name
		if name == "" && len(c.Schema) > 0 {
			name = c.Schema[0].Name
		}
		if name == "" {
			return nil, fmt.Errorf("%w: shape column %d has no name", ErrInvalidArgument, i)
		}
		srcCol := root.Child(name)
		if len(c.Schema) == 0 && (srcCol == nil || c.Const != nil) {
			return nil, fmt.Errorf("%w: column %q is not in the file, and its type cannot be made up as nulls", ErrUnsupported, name)
		}
		if c.Const != nil || srcCol == nil {
			if err := out.addMadeUp(c); err != nil {
				return nil, fmt.Errorf("column %q: %w", name, err)
			}
			identity = false
			continue
		}
		if widened := out.addSource(t, srcCol, c.Schema); widened || i >= len(root.Children) || root.Children[i] != srcCol {
			identity = false
		}
	}
	if identity {
		return nil, nil
	}
	out.orders = shapeOrders(meta, out.leaves)
	return out, nil
}

// addSource appends the subtree of the source column n, compared with want (the shape's subtree
// of the same column), and reports whether a leaf annotation was widened. A subtree whose shape
// differs from want's (a legacy list layout, a struct with other fields) or whose leaves store
// other physical types (INT96 timestamps, decimals in another width) is served as stored: its
// values are right, and readers convert such types themselves.
func (s *shaping) addSource(t *SchemaTree, n *SchemaNode, want []format.SchemaElement) bool {
	start := nodeIndex(t, n)
	end := subtreeEnd(t, start)
	same := end-start == len(want) && n.Name() == want[0].Name
	for k := start; same && k < end; k++ {
		el, w := t.Nodes[k].Element, &want[k-start]
		same = numChildren(el) == numChildren(w) && (k == start || el.Name == w.Name)
	}
	widened := false
	for k := start; k < end; k++ {
		el := *t.Nodes[k].Element
		if leaf := t.Nodes[k].Leaf; leaf >= 0 {
			out := outLeaf{src: leaf, path: t.path(k, func(j int) string { return t.Nodes[j].Name() })}
			if same {
				var wide bool
				el, wide = serveLeafAs(&el, &want[k-start])
				if !wide {
					el, out.conv = s.convertLeaf(t, k, &want[k-start])
					wide = out.conv != nil
				}
				widened = widened || wide
			}
			s.leaves = append(s.leaves, out)
		}
		s.schema = append(s.schema, el)
	}
	return widened
}

// convertLeaf returns the element and converter of the source leaf at element k when the
// shape's leaf want is a wider type in another physical type (the leaf keeps its name,
// repetition and field id), else the source element and nil.
func (s *shaping) convertLeaf(t *SchemaTree, k int, want *format.SchemaElement) (format.SchemaElement, *convLeaf) {
	el := t.Nodes[k].Element
	if el.Type == want.Type {
		return *el, nil
	}
	conv := widening(el, want)
	if conv == nil {
		return *el, nil
	}
	schema, err := convSchema(t, k, want.Type.V, int(want.TypeLength.V))
	if err != nil {
		return *el, nil
	}
	out := *want
	out.Name, out.RepetitionType, out.FieldID = el.Name, el.RepetitionType, el.FieldID
	s.converted = true
	return out, &convLeaf{conv: conv, schema: schema}
}

// addMadeUp appends a column the source lacks (all nulls) or a constant.
func (s *shaping) addMadeUp(c ShapeColumn) error {
	if c.Const != nil && (len(c.Schema) != 1 || !isOptional(&c.Schema[0])) {
		return fmt.Errorf("%w: a constant column must be one optional leaf", ErrInvalidArgument)
	}
	base := len(s.schema)
	s.schema = append(s.schema, c.Schema...)
	s.schema[base].RepetitionType = thrift.New(format.Optional) // made up: null in every row
	tree, err := BuildSchemaTree(append([]format.SchemaElement{{Name: "root", NumChildren: thrift.New(int32(1))}}, s.schema[base:]...))
	if err != nil {
		return err
	}
	if len(tree.Nodes) != len(c.Schema)+1 {
		return fmt.Errorf("%w: shape schema holds more than one column", ErrInvalidArgument)
	}
	for _, idx := range tree.Leaves {
		n := &tree.Nodes[idx]
		if !n.Element.Type.Valid {
			return fmt.Errorf("%w: leaf %q has no physical type", ErrInvalidArgument, n.Name())
		}
		g := &genLeaf{el: *n.Element, maxDef: n.MaxDef, maxRep: maxRep(tree, idx)}
		if c.Const != nil && !c.Const.Null {
			g.value = c.Const.Plain
		}
		s.leaves = append(s.leaves, outLeaf{src: -1, gen: g, path: tree.path(idx, func(j int) string { return tree.Nodes[j].Name() })})
	}
	return nil
}

// serveLeafAs returns the element a source leaf el is served with for the shape's leaf want,
// and whether it is widened: want's annotation when both store the same physical type and only
// the annotation widens (INT(8) to INT(32), DECIMAL(5,2) to DECIMAL(7,2)), else el itself.
func serveLeafAs(el, want *format.SchemaElement) (format.SchemaElement, bool) {
	if el.Type != want.Type {
		return *el, false
	}
	if ws, ok := intBits(want); ok {
		if es, ok := intBits(el); ok && es < ws && el.Type.V == format.Int32 {
			return annotatedAs(el, want), true
		}
	}
	if wp, wsc, ok := decimalParams(want); ok {
		if ep, esc, ok := decimalParams(el); ok && esc == wsc && ep < wp {
			return annotatedAs(el, want), true
		}
	}
	return *el, false
}

// annotatedAs returns el with want's annotations (name, repetition and field id stay el's).
func annotatedAs(el, want *format.SchemaElement) format.SchemaElement {
	out := *el
	out.ConvertedType, out.LogicalType = want.ConvertedType, want.LogicalType
	out.Precision, out.Scale = want.Precision, want.Scale
	return out
}

// intBits returns the bit width of an integer-annotated leaf (INT(n) or INT_n converted types;
// an unannotated INT32/INT64 is 32/64).
func intBits(el *format.SchemaElement) (int, bool) {
	if lt := el.LogicalType.Value; lt != nil {
		if it, ok := lt.(*format.IntType); ok && it.IsSigned {
			return int(it.BitWidth), true
		}
		return 0, false
	}
	if el.ConvertedType.Valid {
		switch el.ConvertedType.V {
		case deprecated.Int8:
			return 8, true
		case deprecated.Int16:
			return 16, true
		case deprecated.Int32:
			return 32, true
		case deprecated.Int64:
			return 64, true
		}
		return 0, false
	}
	switch el.Type.V {
	case format.Int32:
		return 32, true
	case format.Int64:
		return 64, true
	}
	return 0, false
}

// decimalParams returns the precision and scale of a DECIMAL leaf.
func decimalParams(el *format.SchemaElement) (int, int, bool) {
	if dt, ok := el.LogicalType.Value.(*format.DecimalType); ok {
		return int(dt.Precision), int(dt.Scale), true
	}
	if el.ConvertedType.Valid && el.ConvertedType.V == deprecated.Decimal {
		return int(el.Precision.V), int(el.Scale.V), true
	}
	return 0, 0, false
}

func isOptional(el *format.SchemaElement) bool {
	return el.RepetitionType.Valid && el.RepetitionType.V == format.Optional
}

// nodeIndex returns the element index of n in t.
func nodeIndex(t *SchemaTree, n *SchemaNode) int {
	for i := range t.Nodes {
		if &t.Nodes[i] == n {
			return i
		}
	}
	return -1
}

// subtreeEnd returns the element index just past the subtree at i (elements are depth first).
func subtreeEnd(t *SchemaTree, i int) int {
	end := i + 1
	for end < len(t.Nodes) && isUnder(t, end, i) {
		end++
	}
	return end
}

func isUnder(t *SchemaTree, j, i int) bool {
	for ; j > 0; j = t.Nodes[j].Parent {
		if t.Nodes[j].Parent == i {
			return true
		}
	}
	return false
}

// maxRep returns the maximum repetition level of element i.
func maxRep(t *SchemaTree, i int) int {
	r := 0
	for ; i > 0; i = t.Nodes[i].Parent {
		if t.Nodes[i].Repeated() {
			r++
		}
	}
	return r
}

// shapeOrders returns the output's column orders: the source's for source leaves, type-defined
// for made-up ones; nil when the source states none.
func shapeOrders(meta *format.FileMetaData, leaves []outLeaf) []format.ColumnOrder {
	if len(meta.ColumnOrders) == 0 {
		return nil
	}
	out := make([]format.ColumnOrder, len(leaves))
	for i, l := range leaves {
		if l.src >= 0 && l.src < len(meta.ColumnOrders) {
			out[i] = meta.ColumnOrders[l.src]
		} else {
			out[i] = format.ColumnOrder{Value: &format.TypeDefinedOrder{}}
		}
	}
	return out
}

// shapedMeta returns meta's output form under s: the shape's schema and column orders, and key
// values that embed a schema (Arrow's, Spark's) left out, since they would describe columns the
// output does not have in that order. Row groups are left to shapedGroup.
func (s *shaping) shapedMeta(meta *format.FileMetaData) {
	meta.Schema = s.schema
	meta.ColumnOrders = s.orders
	meta.KeyValueMetadata = slices.DeleteFunc(slices.Clone(meta.KeyValueMetadata), func(kv format.KeyValue) bool {
		return kv.Key == arrowSchemaKey || kv.Key == sparkSchemaKey
	})
}

// shapedGroup returns the output row group for rg (its chunks already at their output offsets,
// in source column order, with statistics edits edits) with rows rows: the shape's leaves in
// order, made-up chunks laid out from pos, whose bytes it returns.
// convert encodes a converted leaf's chunk at pos (Plan.convertedChunk for the row group).
func (s *shaping) shapedGroup(rg format.RowGroup, edits []statsEdit, rows, pos int64,
	convert func(col int, c *convLeaf, pos int64) (format.ColumnChunk, []byte, error)) (format.RowGroup, []statsEdit, []byte, error) {
	out := rg
	out.Columns = make([]format.ColumnChunk, len(s.leaves))
	var outEdits []statsEdit
	if edits != nil {
		outEdits = make([]statsEdit, len(s.leaves))
	}
	var gen []byte
	out.TotalByteSize, out.TotalCompressedSize = 0, 0
	for i, l := range s.leaves {
		if l.conv != nil {
			var b []byte
			var err error
			if out.Columns[i], b, err = convert(l.src, l.conv, pos+int64(len(gen))); err != nil {
				return out, nil, nil, err
			}
			gen = append(gen, b...)
			if edits != nil {
				outEdits[i] = keepStats
			}
		} else if l.src >= 0 {
			if l.src >= len(rg.Columns) {
				return out, nil, nil, fmt.Errorf("%w: row group has no column %d", ErrCorrupt, l.src)
			}
			out.Columns[i] = rg.Columns[l.src]
			// Page indexes are left out: readers take them all or none, and made-up
			// chunks have none.
			c := &out.Columns[i]
			c.OffsetIndexOffset, c.OffsetIndexLength, c.ColumnIndexOffset, c.ColumnIndexLength = 0, 0, 0, 0
			if edits != nil {
				outEdits[i] = edits[l.src]
			}
		} else {
			var err error
			out.Columns[i], gen, err = l.gen.chunk(gen, pos+int64(len(gen)), rows)
			if err != nil {
				return out, nil, nil, err
			}
		}
		out.Columns[i].MetaData.PathInSchema = slices.Clone(l.path)
		out.TotalByteSize += out.Columns[i].MetaData.TotalUncompressedSize
		out.TotalCompressedSize += out.Columns[i].MetaData.TotalCompressedSize
	}
	return out, outEdits, gen, nil
}

// tailGuess is how much of a file's end ShapeNeeded reads at once: the footers of most files
// fit, so one read (one ranged GET of a remote object) usually decides.
const tailGuess = 64 << 10

// tailBufs recycles ShapeNeeded's reads of file ends: a listing stats every file once.
var tailBufs = sync.Pool{New: func() any { b := make([]byte, tailGuess); return &b }}

// ShapeNeeded reports whether the Parquet file src (size bytes) must be reshaped to be served in
// shape. It reads only the file's end: usually one read of up to 64 KiB, and for a larger
// footer a second one of its schema (see readSchemaBytes). With a memo (and shape.Key set), a schema decided before, byte for byte, is
// decided again without being decoded.
func ShapeNeeded(src io.ReaderAt, size int64, shape *Shape, memo *ShapeMemo) (bool, error) {
	if size < int64(len(magic))+trailerLen {
		return false, fmt.Errorf("%w: file of %d bytes is too small", ErrCorrupt, size)
	}
	bp := tailBufs.Get().(*[]byte)
	defer tailBufs.Put(bp)
	tail := (*bp)[:min(size, tailGuess)]
	if err := readFull(src, tail, size-int64(len(tail))); err != nil {
		return false, fmt.Errorf("read parquet footer: %w", err)
	}
	trailer := tail[len(tail)-trailerLen:]
	if string(trailer[4:]) == magicEncrypt {
		return false, fmt.Errorf("%w: encrypted footer (magic PARE)", ErrEncrypted)
	}
	if string(trailer[4:]) != magic {
		return false, fmt.Errorf("%w: bad magic %q at the end", ErrCorrupt, trailer[4:])
	}
	n := int64(binary.LittleEndian.Uint32(trailer[:4]))
	if n > maxFooterLen || size-trailerLen-n < int64(len(magic)) {
		return false, fmt.Errorf("%w: footer length %d does not fit a file of %d bytes", ErrCorrupt, n, size)
	}
	raw, err := readSchemaBytes(src, size, tail, n)
	if err != nil {
		return false, err
	}
	if memo != nil && shape.Key != "" {
		if rw, ok := memo.get(shape.Key, raw); ok {
			return rw, nil
		}
	}
	rw, err := shapeNeededFor(raw, shape)
	if err == nil && memo != nil && shape.Key != "" {
		memo.put(shape.Key, raw, rw)
	}
	return rw, err
}

// shapeNeededFor decides ShapeNeeded from the encoded schema list alone (schemaBytes), so
// that the verdict is a function of those bytes and the shape.
func shapeNeededFor(raw []byte, shape *Shape) (bool, error) {
	// The list as the only field of a FileMetaData: field 2, a list (delta 2, type 9), then
	// the struct's stop byte.
	enc := make([]byte, 0, len(raw)+2)
	enc = append(append(append(enc, 0x29), raw...), tStop)
	var meta format.FileMetaData
	if err := decodeSchemaOnly(enc, &meta); err != nil {
		return false, err
	}
	tree, err := BuildSchemaTree(meta.Schema)
	if err != nil {
		return false, err
	}
	s, err := applyShape(&meta, tree, shape)
	return s != nil, err
}

// schemaBytes returns the encoded schema (field 2 of FileMetaData, a list of SchemaElement) of
// the encoded footer buf, without decoding it. Writers put it second, after the version, so
// the row groups (most of a footer) are not walked.
func schemaBytes(buf []byte) ([]byte, error) {
	b := thriftBuf(buf)
	off, prev := 0, int16(0)
	for {
		f, err := b.fieldHeader(off, prev)
		if err != nil {
			return nil, err
		}
		if f.typ == tStop {
			return nil, fmt.Errorf("%w: footer without a schema", ErrCorrupt)
		}
		end, err := b.skip(f.value, f.typ, 0)
		if err != nil {
			return nil, err
		}
		if f.id == 2 {
			if f.typ != tList {
				return nil, fmt.Errorf("%w: footer schema of thrift type %d, not a list", ErrCorrupt, f.typ)
			}
			return buf[f.value:end], nil
		}
		off, prev = end, f.id
	}
}

// readSchemaBytes returns the encoded schema of the footer of n bytes that ends the file (size
// bytes) whose last bytes are tail. A footer larger than tail is read from its start, where
// the schema is, only as far as the schema goes: up to tailGuess bytes, and the rest only for
// a schema that does not fit them. A footer of a file with thousands of row groups is
// megabytes of column chunk metadata after a schema of a few kilobytes, so a listing reads a
// few kilobytes a file, not its whole footer.
func readSchemaBytes(src io.ReaderAt, size int64, tail []byte, n int64) ([]byte, error) {
	if buf := tail[max(0, int64(len(tail))-trailerLen-n) : len(tail)-trailerLen]; int64(len(buf)) == n {
		return schemaBytes(buf)
	}
	start := size - trailerLen - n
	head := tail[:min(n, int64(len(tail)))] // tail's buffer is free again: the trailer was read
	if err := readFull(src, head, start); err != nil {
		return nil, fmt.Errorf("read parquet footer: %w", err)
	}
	if raw, err := schemaBytes(head); err == nil || int64(len(head)) == n {
		return raw, err
	}
	buf := make([]byte, n) // a schema longer than the head, or a footer the head cut
	if err := readFull(src, buf, start); err != nil {
		return nil, fmt.Errorf("read parquet footer: %w", err)
	}
	return schemaBytes(buf)
}

// ShapeMemo remembers ShapeNeeded's verdicts by shape key and encoded schema: the files one
// writer wrote for one table share their schema's bytes, so a snapshot of a million files
// decodes a handful of schemas. It holds at most its byte budget of schemas (cleared when
// full) and is safe for concurrent use.
type ShapeMemo struct {
	mu    sync.Mutex
	m     map[string]bool // guarded by mu: shape key, NUL, encoded schema
	bytes int             // guarded by mu: the keys' length
	max   int
}

// NewShapeMemo returns a memo holding up to maxBytes of keys.
func NewShapeMemo(maxBytes int) *ShapeMemo { return &ShapeMemo{m: map[string]bool{}, max: maxBytes} }

func (m *ShapeMemo) get(shapeKey string, raw []byte) (bool, bool) {
	var scratch [1024]byte // most keys fit: the lookup allocates nothing
	k := append(append(append(scratch[:0], shapeKey...), 0), raw...)
	m.mu.Lock()
	defer m.mu.Unlock()
	rw, ok := m.m[string(k)]
	return rw, ok
}

func (m *ShapeMemo) put(shapeKey string, raw []byte, rw bool) {
	k := memoKey(shapeKey, raw)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(k) > m.max {
		return
	}
	if m.bytes+len(k) > m.max {
		clear(m.m)
		m.bytes = 0
	}
	if _, ok := m.m[k]; !ok {
		m.bytes += len(k)
	}
	m.m[k] = rw
}

// memoKey is the map key of a shape and schema.
func memoKey(shapeKey string, raw []byte) string {
	return shapeKey + "\x00" + string(raw)
}

// footerSchema is the part of FileMetaData a shape decision needs: the decoder skips the rest
// (row groups and their statistics, most of a footer) without building it.
type footerSchema struct {
	Schema []format.SchemaElement `thrift:"2,required"`
}

// decodeSchemaOnly decodes the schema of the encoded footer buf into meta.Schema.
func decodeSchemaOnly(buf []byte, meta *format.FileMetaData) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: decode footer: %v", ErrCorrupt, r)
		}
	}()
	var fs footerSchema
	var proto thrift.CompactProtocol
	if err := thrift.Unmarshal(&proto, buf, &fs); err != nil {
		return fmt.Errorf("%w: decode footer schema: %v", ErrCorrupt, err)
	}
	meta.Schema = fs.Schema
	return nil
}
