package writeback

import (
	"fmt"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/pqfile"
)

// schemaCheck matches a file's Parquet schema against the table schema
// (logical names) and records what the commit needs from the match: the
// footer renames for column mapping, the Parquet nodes that must hold no
// nulls, and the leaves that get statistics.
type schemaCheck struct {
	file    string
	mode    delta.ColumnMappingMode
	renames map[string]renameTo // by source path (pathKey)
	nonNull []nonNullNode
	leaves  []statLeaf
	// widen, when not nil, collects the leaves of a lossless widening
	// (widen.go) instead of refusing them; nil: every type must match.
	widen *[]widening
}

// renameTo is the physical name and field id of a Parquet element.
type renameTo struct {
	name  string
	id    int64
	hasID bool
}

// nonNullNode is a Parquet node that holds a non-nullable Delta value:
// a row whose definition level at the node's first leaf makes nullAt true
// breaks the constraint.
type nonNullNode struct {
	node   *pqfile.SchemaNode
	path   string // logical, for messages
	nullAt func(def int) bool
	why    string // added to the message
}

// nullHere is the check for a node inside a list or map: only a null at
// the node itself (definition level exactly def-1) is one; an empty or
// null container above it holds no value at all.
func nullHere(n *pqfile.SchemaNode, path string) nonNullNode {
	d := n.MaxDef - 1
	return nonNullNode{node: n, path: path, nullAt: func(def int) bool { return def == d }}
}

// nullHereOrAbove is the check for a field reached through structs only:
// Spark evaluates NOT NULL on the field's value, which is null when a
// parent struct is null too, so any level below the node's counts.
func nullHereOrAbove(n *pqfile.SchemaNode, path []string) nonNullNode {
	d := n.MaxDef
	nn := nonNullNode{node: n, path: dotted(path), nullAt: func(def int) bool { return def < d }}
	if len(path) > 1 {
		nn.why = " (itself or a parent struct is null in some row; Spark refuses both)"
	}
	return nn
}

// statLeaf is a primitive column reachable through structs only: the
// columns that get min/max/nullCount statistics.
type statLeaf struct {
	logical  []string
	physical []string
	typ      delta.DataType
	node     *pqfile.SchemaNode
}

func pathKey(p []string) string { return strings.Join(p, "\x00") }

// checkTopLevel matches the file's root children against the data columns
// of the table (partition columns must not be in the file).
func (c *schemaCheck) checkTopLevel(schema *delta.StructType, partCols map[string]bool, root *pqfile.SchemaNode) error {
	for _, n := range root.Children {
		if partCols[strings.ToLower(n.Name())] {
			return invalidf("%s: column %q is a partition column: its value comes from the inbox directory (%s=<value>/) and must not be in the file",
				c.file, n.Name(), n.Name())
		}
	}
	data := &delta.StructType{}
	for _, f := range schema.Fields {
		if !partCols[strings.ToLower(f.Name)] {
			data.Fields = append(data.Fields, f)
		}
	}
	return c.checkStruct(data, root, nil, nil, true)
}

// checkStruct matches the children of group n against struct st. Extra
// columns are refused (all named at once); a missing non-nullable field is
// refused; nullable fields may be missing.
func (c *schemaCheck) checkStruct(st *delta.StructType, n *pqfile.SchemaNode, src, phys []string, viaStructs bool) error {
	var extra []string
	seen := map[string]bool{}
	for _, ch := range n.Children {
		if seen[ch.Name()] {
			return invalidf("%s: column %s appears twice", c.file, dotted(append(src, ch.Name())))
		}
		seen[ch.Name()] = true
		if st.Field(ch.Name()) == nil {
			extra = append(extra, dotted(append(src, ch.Name())))
		}
	}
	if len(extra) > 0 {
		return invalidf("%s: column(s) not in the table schema: %s (table columns: %s)",
			c.file, strings.Join(extra, ", "), fieldNames(st))
	}
	for _, f := range st.Fields {
		ch := n.Child(f.Name)
		if ch == nil {
			if !f.Nullable {
				return invalidf("%s: non-nullable column %s is missing from the file", c.file, dotted(append(src, f.Name)))
			}
			continue
		}
		if err := c.checkField(f, ch, src, phys, viaStructs); err != nil {
			return err
		}
	}
	return nil
}

func (c *schemaCheck) checkField(f *delta.StructField, n *pqfile.SchemaNode, src, phys []string, viaStructs bool) error {
	fsrc := appendPath(src, n.Name())
	fphys := appendPath(phys, f.PhysicalName(c.mode))
	if c.mode != delta.ColumnMappingNone {
		id, ok := f.FieldID()
		c.renames[pathKey(fsrc)] = renameTo{name: f.PhysicalName(c.mode), id: id, hasID: ok}
	}
	if n.Repeated() {
		return c.mismatch(fsrc, f.Type, n, "a repeated field (use a LIST)")
	}
	switch {
	case f.Nullable:
	case viaStructs && n.MaxDef > 0: // itself or a parent optional
		c.nonNull = append(c.nonNull, nullHereOrAbove(n, fsrc))
	case n.Optional():
		c.nonNull = append(c.nonNull, nullHere(n, dotted(fsrc)))
	}
	if viaStructs && n.Leaf >= 0 {
		c.leaves = append(c.leaves, statLeaf{logical: fsrc, physical: fphys, typ: f.Type, node: n})
	}
	return c.checkType(f.Type, n, fsrc, fphys, viaStructs)
}

// checkType checks that node n can hold values of type t.
func (c *schemaCheck) checkType(t delta.DataType, n *pqfile.SchemaNode, src, phys []string, viaStructs bool) error {
	switch t := t.(type) {
	case *delta.StructType:
		if n.Leaf >= 0 || isList(n) || isMap(n) {
			return c.mismatch(src, t, n, "")
		}
		return c.checkStruct(t, n, src, phys, viaStructs)
	case *delta.ArrayType:
		return c.checkList(t, n, src, phys)
	case *delta.MapType:
		return c.checkMap(t, n, src, phys)
	}
	if n.Leaf < 0 {
		return c.mismatch(src, t, n, "")
	}
	if primitiveOK(t, n.Element) {
		return nil
	}
	ft := fileType(n.Element)
	if ft != nil && widens(ft, t) {
		if c.widen != nil && viaStructs {
			*c.widen = append(*c.widen, widening{leaf: n.Leaf, from: ft, to: t, path: dotted(src)})
			return nil
		}
		if !viaStructs {
			return c.mismatch(src, t, n, describe(n)+"; a widening is accepted only outside lists and maps")
		}
	}
	if ft != nil && widens(t, ft) {
		return c.mismatch(src, t, n, fmt.Sprintf("%s, a %s: narrowing %s to %s could lose values (only lossless widenings are accepted)", describe(n), ft, ft, t))
	}
	return c.mismatch(src, t, n, "")
}

// checkList accepts the standard 3-level LIST and the legacy 2-level forms.
func (c *schemaCheck) checkList(t *delta.ArrayType, n *pqfile.SchemaNode, src, phys []string) error {
	if !isList(n) || len(n.Children) != 1 || !n.Children[0].Repeated() {
		return c.mismatch(src, t, n, "")
	}
	rep := n.Children[0]
	elem := rep
	if len(rep.Children) == 1 && rep.Name() != "array" && !strings.HasSuffix(rep.Name(), "_tuple") {
		elem = rep.Children[0] // 3-level; else a 2-level list of required elements
	}
	esrc := appendPath(src, rep.Name())
	if elem != rep {
		esrc = appendPath(esrc, elem.Name())
		if !t.ContainsNull && elem.Optional() {
			c.nonNull = append(c.nonNull, nullHere(elem, dotted(src)+".element"))
		}
	}
	return c.checkType(t.ElementType, elemView(elem), esrc, appendPath(phys, "element"), false)
}

// elemView presents a repeated 2-level element as a plain node of its type.
func elemView(n *pqfile.SchemaNode) *pqfile.SchemaNode {
	if !n.Repeated() {
		return n
	}
	cp := *n
	el := *n.Element
	el.RepetitionType.V = format.Required
	cp.Element = &el
	return &cp
}

func (c *schemaCheck) checkMap(t *delta.MapType, n *pqfile.SchemaNode, src, phys []string) error {
	if !isMap(n) || len(n.Children) != 1 || !n.Children[0].Repeated() {
		return c.mismatch(src, t, n, "")
	}
	kv := n.Children[0]
	k, v := kv.Child("key"), kv.Child("value")
	if k == nil || v == nil || len(kv.Children) != 2 {
		return c.mismatch(src, t, n, "a MAP without key and value fields")
	}
	kvsrc := appendPath(src, kv.Name())
	if k.Optional() {
		c.nonNull = append(c.nonNull, nullHere(k, dotted(src)+".key"))
	}
	if !t.ValueContainsNull && v.Optional() {
		c.nonNull = append(c.nonNull, nullHere(v, dotted(src)+".value"))
	}
	if err := c.checkType(t.KeyType, k, appendPath(kvsrc, "key"), appendPath(phys, "key"), false); err != nil {
		return err
	}
	return c.checkType(t.ValueType, v, appendPath(kvsrc, "value"), appendPath(phys, "value"), false)
}

func (c *schemaCheck) mismatch(src []string, t delta.DataType, n *pqfile.SchemaNode, why string) error {
	if why == "" {
		why = describe(n)
	}
	return invalidf("%s: column %s has the wrong type: the table wants %s, the file has %s",
		c.file, dotted(src), t, why)
}

func isList(n *pqfile.SchemaNode) bool {
	if _, ok := n.Element.LogicalType.Value.(*format.ListType); ok {
		return true
	}
	return n.Element.ConvertedType.Valid && n.Element.ConvertedType.V == deprecated.List
}

func isMap(n *pqfile.SchemaNode) bool {
	if _, ok := n.Element.LogicalType.Value.(*format.MapType); ok {
		return true
	}
	return n.Element.ConvertedType.Valid &&
		(n.Element.ConvertedType.V == deprecated.Map || n.Element.ConvertedType.V == deprecated.MapKeyValue)
}

// primitiveOK is the physical-type compatibility table for a blind append:
// exactly the encodings Spark writes or reads without conversion.
func primitiveOK(t delta.DataType, el *format.SchemaElement) bool {
	if d, ok := t.(delta.DecimalType); ok {
		return decimalOK(d, el)
	}
	p, ok := t.(delta.PrimitiveType)
	if !ok {
		return false
	}
	pt := el.Type.V
	switch p.Name {
	case "long":
		return pt == format.Int64 && intAnnotation(el, 64)
	case "integer":
		return pt == format.Int32 && intAnnotation(el, 32)
	case "short":
		return pt == format.Int32 && intWidth(el) == 16
	case "byte":
		return pt == format.Int32 && intWidth(el) == 8
	case "float":
		return pt == format.Float && noAnnotation(el)
	case "double":
		return pt == format.Double && noAnnotation(el)
	case "boolean":
		return pt == format.Boolean
	case "string":
		return pt == format.ByteArray && isString(el)
	case "binary":
		return pt == format.ByteArray && noAnnotation(el)
	case "date":
		return pt == format.Int32 && isDate(el)
	case "timestamp":
		return pt == format.Int96 || (pt == format.Int64 && tsUnitOK(el, true))
	case "timestamp_ntz":
		return pt == format.Int64 && tsUnitOK(el, false)
	}
	return false // variant, void and unknown types cannot be appended
}

func noAnnotation(el *format.SchemaElement) bool {
	return el.LogicalType.Value == nil && !el.ConvertedType.Valid
}

// intWidth returns the signed integer width annotation, 0 when there is
// none, -1 for an unsigned or other annotation.
func intWidth(el *format.SchemaElement) int {
	if it, ok := el.LogicalType.Value.(*format.IntType); ok {
		if !it.IsSigned {
			return -1
		}
		return int(it.BitWidth)
	}
	if el.LogicalType.Value != nil {
		return -1
	}
	if !el.ConvertedType.Valid {
		return 0
	}
	switch el.ConvertedType.V {
	case deprecated.Int8:
		return 8
	case deprecated.Int16:
		return 16
	case deprecated.Int32:
		return 32
	case deprecated.Int64:
		return 64
	}
	return -1
}

func intAnnotation(el *format.SchemaElement, bits int) bool {
	w := intWidth(el)
	return w == 0 || w == bits
}

func isString(el *format.SchemaElement) bool {
	switch el.LogicalType.Value.(type) {
	case *format.StringType, *format.EnumType, *format.JsonType:
		return true
	}
	return el.ConvertedType.Valid && (el.ConvertedType.V == deprecated.UTF8 ||
		el.ConvertedType.V == deprecated.Enum || el.ConvertedType.V == deprecated.Json)
}

func isDate(el *format.SchemaElement) bool {
	if _, ok := el.LogicalType.Value.(*format.DateType); ok {
		return true
	}
	return el.ConvertedType.Valid && el.ConvertedType.V == deprecated.Date
}

// tsUnitOK accepts INT64 timestamps in micros or millis with the wanted
// UTC adjustment (legacy TIMESTAMP_* converted types are UTC-adjusted).
func tsUnitOK(el *format.SchemaElement, utc bool) bool {
	if ts, ok := el.LogicalType.Value.(*format.TimestampType); ok {
		switch ts.Unit.Value.(type) {
		case *format.MicroSeconds, *format.MilliSeconds:
			return ts.IsAdjustedToUTC == utc
		}
		return false
	}
	if el.LogicalType.Value != nil || !el.ConvertedType.Valid {
		return false
	}
	ct := el.ConvertedType.V
	return utc && (ct == deprecated.TimestampMicros || ct == deprecated.TimestampMillis)
}

// tsMillis reports whether an INT64 timestamp column counts milliseconds.
func tsMillis(el *format.SchemaElement) bool {
	if ts, ok := el.LogicalType.Value.(*format.TimestampType); ok {
		_, ms := ts.Unit.Value.(*format.MilliSeconds)
		return ms
	}
	return el.ConvertedType.Valid && el.ConvertedType.V == deprecated.TimestampMillis
}

func decimalOK(d delta.DecimalType, el *format.SchemaElement) bool {
	p, s, ok := decimalOf(el)
	if !ok || p != d.Precision || s != d.Scale {
		return false
	}
	switch el.Type.V {
	case format.Int32:
		return p <= 9
	case format.Int64:
		return p <= 18
	case format.FixedLenByteArray, format.ByteArray:
		return true
	}
	return false
}

// decimalOf returns the decimal annotation of a column.
func decimalOf(el *format.SchemaElement) (precision, scale int, ok bool) {
	if dt, isDec := el.LogicalType.Value.(*format.DecimalType); isDec {
		return int(dt.Precision), int(dt.Scale), true
	}
	if el.ConvertedType.Valid && el.ConvertedType.V == deprecated.Decimal {
		return int(el.Precision.V), int(el.Scale.V), true
	}
	return 0, 0, false
}

// describe names a Parquet node's type for messages, e.g.
// "optional INT32 (DATE)" or "a group (LIST)".
func describe(n *pqfile.SchemaNode) string {
	rep := "required"
	switch {
	case n.Optional():
		rep = "optional"
	case n.Repeated():
		rep = "repeated"
	}
	ann := n.Element.LogicalType.String()
	if ann == "" && n.Element.ConvertedType.Valid {
		ann = convertedName(n.Element.ConvertedType.V)
	}
	what := "group"
	if n.Leaf >= 0 {
		what = n.Element.Type.V.String()
	}
	if ann != "" {
		return fmt.Sprintf("%s %s (%s)", rep, what, ann)
	}
	return rep + " " + what
}

// convertedName names a legacy converted type for messages.
func convertedName(ct deprecated.ConvertedType) string {
	names := map[deprecated.ConvertedType]string{
		deprecated.UTF8: "UTF8", deprecated.Map: "MAP", deprecated.MapKeyValue: "MAP_KEY_VALUE",
		deprecated.List: "LIST", deprecated.Enum: "ENUM", deprecated.Decimal: "DECIMAL",
		deprecated.Date: "DATE", deprecated.TimeMillis: "TIME_MILLIS", deprecated.TimeMicros: "TIME_MICROS",
		deprecated.TimestampMillis: "TIMESTAMP_MILLIS", deprecated.TimestampMicros: "TIMESTAMP_MICROS",
		deprecated.Uint8: "UINT_8", deprecated.Uint16: "UINT_16", deprecated.Uint32: "UINT_32",
		deprecated.Uint64: "UINT_64", deprecated.Int8: "INT_8", deprecated.Int16: "INT_16",
		deprecated.Int32: "INT_32", deprecated.Int64: "INT_64", deprecated.Json: "JSON",
		deprecated.Bson: "BSON", deprecated.Interval: "INTERVAL",
	}
	if n, ok := names[ct]; ok {
		return n
	}
	return fmt.Sprintf("converted type %d", ct)
}

func fieldNames(st *delta.StructType) string {
	names := make([]string, len(st.Fields))
	for i, f := range st.Fields {
		names[i] = f.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func dotted(p []string) string { return strings.Join(p, ".") }

func appendPath(p []string, c string) []string {
	out := make([]string, len(p), len(p)+1)
	copy(out, p)
	return append(out, c)
}
