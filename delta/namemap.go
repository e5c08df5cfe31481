package delta

import "strings"

// NameMap translates between logical (display) and physical column names
// of one schema under one column mapping mode, for top-level and nested
// fields. It is immutable after NewNameMap and safe for concurrent use.
//
// Two path forms are accepted:
//   - dotted strings (Logical, Physical): struct field names joined by ".",
//     with Delta's "element" for an array element and "key"/"value" for a
//     map's key/value ("a.b", "arr.element.x", "m.value"). Ambiguous only
//     when a name itself contains a dot; the first field in schema order
//     wins then, so prefer the slice forms.
//   - component slices (LogicalPath, PhysicalPath, FieldID): the same
//     components, and additionally the Parquet nesting levels of the
//     standard 3-level LIST ("list" then the element, any name) and MAP
//     ("key_value" or legacy "map", then "key"/"value") encodings, and
//     Spark's legacy "bag" list level. Below an array, a component other
//     than "list"/"bag" is taken as the element itself (2-level lists such
//     as "array", "element", "item"). Only struct field names are
//     translated; nesting components are copied unchanged, so the output
//     has the input's length and a Parquet footer rewriter can rename node i
//     of a column path to output[i].
//
// Under ColumnMappingNone both names are the field's Name and no field ids
// are reported.
type NameMap struct {
	mode       ColumnMappingMode
	schema     *StructType
	toLogical  map[string]string
	toPhysical map[string]string
	byID       map[int64][]string
	index      map[*StructType]*structIndex
}

// structIndex finds the fields of one struct by logical and physical name.
type structIndex struct {
	byLogical, byPhysical map[string]*StructField
}

// NewNameMap indexes schema for mode (an empty mode means none).
func NewNameMap(schema *StructType, mode ColumnMappingMode) *NameMap {
	if mode == "" {
		mode = ColumnMappingNone
	}
	n := &NameMap{
		mode:       mode,
		schema:     schema,
		toLogical:  map[string]string{},
		toPhysical: map[string]string{},
		byID:       map[int64][]string{},
		index:      map[*StructType]*structIndex{},
	}
	if schema != nil {
		n.add(schema, nil, nil, nil)
	}
	return n
}

// add indexes t, reached by the given logical and physical paths; owner is
// the nearest enclosing struct field (for nested ids of array/map parts).
func (n *NameMap) add(t DataType, lp, pp []string, owner *ownerRef) {
	switch t := t.(type) {
	case *StructType:
		idx := &structIndex{byLogical: map[string]*StructField{}, byPhysical: map[string]*StructField{}}
		n.index[t] = idx
		for _, f := range t.Fields {
			phys := f.PhysicalName(n.mode)
			if _, dup := idx.byLogical[f.Name]; !dup {
				idx.byLogical[f.Name] = f
			}
			if _, dup := idx.byPhysical[phys]; !dup {
				idx.byPhysical[phys] = f
			}
			flp, fpp := appendPath(lp, f.Name), appendPath(pp, phys)
			n.record(flp, fpp)
			if id, ok := f.FieldID(); ok && n.mode != ColumnMappingNone {
				n.byID[id] = flp
			}
			n.add(f.Type, flp, fpp, &ownerRef{field: f, physical: phys})
		}
	case *ArrayType:
		n.addNested(t.ElementType, "element", lp, pp, owner)
	case *MapType:
		n.addNested(t.KeyType, "key", lp, pp, owner)
		n.addNested(t.ValueType, "value", lp, pp, owner)
	}
}

// ownerRef is the nearest struct field above an array/map part, with the
// Delta-form suffix of the part below it (for delta.columnMapping.nested.ids).
type ownerRef struct {
	field    *StructField
	physical string
	suffix   []string
}

func (n *NameMap) addNested(t DataType, comp string, lp, pp []string, owner *ownerRef) {
	clp, cpp := appendPath(lp, comp), appendPath(pp, comp)
	n.record(clp, cpp)
	if owner != nil {
		owner = &ownerRef{field: owner.field, physical: owner.physical, suffix: appendPath(owner.suffix, comp)}
		if id, ok := n.nestedID(owner); ok {
			n.byID[id] = clp
		}
	}
	n.add(t, clp, cpp, owner)
}

func (n *NameMap) record(lp, pp []string) {
	l, p := strings.Join(lp, "."), strings.Join(pp, ".")
	if _, dup := n.toPhysical[l]; !dup {
		n.toPhysical[l] = p
	}
	if _, dup := n.toLogical[p]; !dup {
		n.toLogical[p] = l
	}
}

// nestedID looks up owner's delta.columnMapping.nested.ids entry keyed by
// "<physical name>.<suffix>" (e.g. "col-1.element.value").
func (n *NameMap) nestedID(o *ownerRef) (int64, bool) {
	if n.mode == ColumnMappingNone {
		return 0, false
	}
	return o.field.NestedFieldID(o.physical + "." + strings.Join(o.suffix, "."))
}

func appendPath(p []string, c string) []string {
	out := make([]string, len(p), len(p)+1)
	copy(out, p)
	return append(out, c)
}

// Mode returns the column mapping mode the map was built for.
func (n *NameMap) Mode() ColumnMappingMode { return n.mode }

// Logical returns the dotted logical path of a dotted physical path.
func (n *NameMap) Logical(physical string) (string, bool) {
	l, ok := n.toLogical[physical]
	return l, ok
}

// Physical returns the dotted physical path of a dotted logical path.
func (n *NameMap) Physical(logical string) (string, bool) {
	p, ok := n.toPhysical[logical]
	return p, ok
}

// LogicalPath translates a physical component path (see NameMap for the
// accepted forms) to logical names; ok is false when a component names no
// field or the path goes below a primitive.
func (n *NameMap) LogicalPath(physicalPath []string) ([]string, bool) {
	steps, ok := n.walk(physicalPath, true)
	if !ok {
		return nil, false
	}
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.comp
		if s.field != nil {
			out[i] = s.field.Name
		}
	}
	return out, true
}

// PhysicalPath translates a logical component path to physical names (see
// LogicalPath).
func (n *NameMap) PhysicalPath(logicalPath []string) ([]string, bool) {
	steps, ok := n.walk(logicalPath, false)
	if !ok {
		return nil, false
	}
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.comp
		if s.field != nil {
			out[i] = s.field.PhysicalName(n.mode)
		}
	}
	return out, true
}

// FieldID returns the Parquet field id of the column at logicalPath: the
// field's delta.columnMapping.id, or for an array element / map key or
// value the nearest enclosing field's delta.columnMapping.nested.ids entry
// (written under icebergCompatV2). Always false under ColumnMappingNone.
func (n *NameMap) FieldID(logicalPath []string) (int64, bool) {
	if n.mode == ColumnMappingNone {
		return 0, false
	}
	steps, ok := n.walk(logicalPath, false)
	if !ok || len(steps) == 0 {
		return 0, false
	}
	var owner *ownerRef
	for _, s := range steps {
		switch {
		case s.field != nil:
			owner = &ownerRef{field: s.field, physical: s.field.PhysicalName(n.mode)}
		case s.nest != "" && owner != nil:
			owner.suffix = append(owner.suffix, s.nest)
		}
	}
	if last := steps[len(steps)-1]; last.field != nil {
		return last.field.FieldID()
	}
	if steps[len(steps)-1].nest == "" || owner == nil {
		return 0, false // a Parquet-only level has no id
	}
	return n.nestedID(owner)
}

// LogicalPathByID returns the logical path (Delta form) of the field or
// nested element with this column mapping id; false under
// ColumnMappingNone or when no field has it.
func (n *NameMap) LogicalPathByID(id int64) ([]string, bool) {
	p, ok := n.byID[id]
	return append([]string(nil), p...), ok
}

// step is one walked path component: a struct field, a Delta nesting part
// (nest = element/key/value), or a Parquet-only level (both empty).
type step struct {
	comp  string
	field *StructField
	nest  string
}

// walk resolves path against the schema, looking struct fields up by
// physical or logical name.
func (n *NameMap) walk(path []string, physical bool) ([]step, bool) {
	steps := make([]step, 0, len(path))
	var t DataType = n.schema
	for i := 0; i < len(path); i++ {
		if st, ok := t.(*StructType); ok {
			f := n.lookup(st, path[i], physical)
			if f == nil {
				return nil, false
			}
			steps = append(steps, step{comp: path[i], field: f})
			t = f.Type
			continue
		}
		// Below an array or map: an optional Parquet-only repeated level,
		// then the element / key / value.
		if isRepeatedLevel(t, path[i]) {
			steps = append(steps, step{comp: path[i]})
			if i++; i == len(path) {
				return steps, true
			}
		}
		nest, child := nestedPart(t, path[i])
		if child == nil {
			return nil, false
		}
		steps = append(steps, step{comp: path[i], nest: nest})
		t = child
	}
	return steps, true
}

// isRepeatedLevel reports whether comp is the Parquet repeated group between
// a LIST/MAP column and its element or key/value.
func isRepeatedLevel(t DataType, comp string) bool {
	switch t.(type) {
	case *ArrayType:
		return comp == "list" || comp == "bag"
	case *MapType:
		return comp == "key_value" || comp == "map"
	}
	return false
}

// nestedPart resolves the component naming an array's element (any name)
// or a map's key/value; child is nil when comp names nothing below t.
func nestedPart(t DataType, comp string) (nest string, child DataType) {
	switch t := t.(type) {
	case *ArrayType:
		return "element", t.ElementType
	case *MapType:
		switch comp {
		case "key":
			return "key", t.KeyType
		case "value":
			return "value", t.ValueType
		}
	}
	return "", nil
}

func (n *NameMap) lookup(s *StructType, name string, physical bool) *StructField {
	idx := n.index[s]
	if idx == nil {
		return nil
	}
	if physical {
		return idx.byPhysical[name]
	}
	return idx.byLogical[name]
}
