package writeback

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/deltafs/deltafs/delta"
	"github.com/parquet-go/parquet-go"
)

// Where Spark keeps the constraints a writer must enforce [§Column
// Invariants, §CHECK Constraints]. Spark enforces whichever are present,
// whatever the protocol version says is active, and so does the appender.
const (
	configConstraintPrefix = "delta.constraints."
	metaInvariants         = "delta.invariants"
)

// tableConstraint is a CHECK constraint or a column invariant, parsed.
type tableConstraint struct {
	label string // for messages: `CHECK constraint positive (id > 0)`
	expr  sqlExpr
}

// tableConstraints returns the table's CHECK constraints (configuration
// keys matched case-insensitively, as Spark matches them; sorted by name)
// and column invariants, parsed. A constraint outside the supported subset
// is an error naming it.
func tableConstraints(m *delta.Metadata, schema *delta.StructType) ([]tableConstraint, error) {
	var out []tableConstraint
	var names []string
	texts := map[string]string{}
	for k, v := range m.Configuration {
		if len(k) > len(configConstraintPrefix) && strings.EqualFold(k[:len(configConstraintPrefix)], configConstraintPrefix) {
			name := strings.ToLower(k[len(configConstraintPrefix):])
			names = append(names, name)
			texts[name] = v
		}
	}
	sort.Strings(names)
	for _, name := range names {
		c, err := newConstraint(fmt.Sprintf("CHECK constraint %s (%s)", name, texts[name]), texts[name])
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	inv, err := invariants(schema, nil, false)
	return append(out, inv...), err
}

func newConstraint(label, text string) (tableConstraint, error) {
	e, err := parseSQL(text)
	if err != nil {
		return tableConstraint{}, fmt.Errorf("%s is outside the SQL subset deltafs evaluates: %v", label, err)
	}
	return tableConstraint{label: label, expr: e}, nil
}

// invariants collects the delta.invariants of the fields under st: a JSON
// string {"expression":{"expression":"<SQL>"}}. One inside an array or a
// map cannot be evaluated per row and is refused.
func invariants(st *delta.StructType, path []string, inContainer bool) ([]tableConstraint, error) {
	var out []tableConstraint
	for _, f := range st.Fields {
		fp := appendPath(path, f.Name)
		if raw, ok := f.Metadata[metaInvariants]; ok {
			label := "invariant of column " + dotted(fp)
			var doc struct {
				Expression struct {
					Expression string `json:"expression"`
				} `json:"expression"`
			}
			s, isString := raw.(string)
			if !isString || json.Unmarshal([]byte(s), &doc) != nil || doc.Expression.Expression == "" {
				return nil, fmt.Errorf("%s: unreadable %s metadata %v", label, metaInvariants, raw)
			}
			if inContainer {
				return nil, fmt.Errorf("%s (%s) is inside an array or a map, which deltafs does not evaluate", label, doc.Expression.Expression)
			}
			c, err := newConstraint(label+" ("+doc.Expression.Expression+")", doc.Expression.Expression)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		inner, err := fieldInvariants(f.Type, fp, inContainer)
		if err != nil {
			return nil, err
		}
		out = append(out, inner...)
	}
	return out, nil
}

func fieldInvariants(t delta.DataType, path []string, inContainer bool) ([]tableConstraint, error) {
	switch t := t.(type) {
	case *delta.StructType:
		return invariants(t, path, inContainer)
	case *delta.ArrayType:
		return fieldInvariants(t.ElementType, appendPath(path, "element"), true)
	case *delta.MapType:
		k, err := fieldInvariants(t.KeyType, appendPath(path, "key"), true)
		if err != nil {
			return nil, err
		}
		v, err := fieldInvariants(t.ValueType, appendPath(path, "value"), true)
		return append(k, v...), err
	}
	return nil, nil
}

// resolveField finds a column of the table by a constraint's path, names
// matched case-insensitively as Spark resolves them, through structs only.
func resolveField(schema *delta.StructType, path []string) ([]string, *delta.StructField, error) {
	st := schema
	var logical []string
	var f *delta.StructField
	for i, name := range path {
		if st == nil {
			return nil, nil, fmt.Errorf("column %s: %s is not a struct", dotted(path), dotted(path[:i]))
		}
		f = nil
		for _, cand := range st.Fields {
			if strings.EqualFold(cand.Name, name) {
				f = cand
				break
			}
		}
		if f == nil {
			return nil, nil, fmt.Errorf("column %s is not in the table", dotted(path))
		}
		logical = append(logical, f.Name)
		st, _ = f.Type.(*delta.StructType)
	}
	return logical, f, nil
}

// columnType maps a Delta type to the evaluator's; ok false outside the subset.
func columnType(t delta.DataType) (sqlType, bool) {
	if d, ok := t.(delta.DecimalType); ok {
		return sqlType{kind: kindDecimal, precision: d.Precision, scale: d.Scale}, true
	}
	p, ok := t.(delta.PrimitiveType)
	if !ok {
		return sqlType{}, false
	}
	switch p.Name {
	case "byte":
		return sqlType{kind: kindInt, bits: 8}, true
	case "short":
		return sqlType{kind: kindInt, bits: 16}, true
	case "integer":
		return sqlType{kind: kindInt, bits: 32}, true
	case "long":
		return sqlType{kind: kindInt, bits: 64}, true
	case "float":
		return sqlType{kind: kindFloat, bits: 32}, true
	case "double":
		return sqlType{kind: kindFloat, bits: 64}, true
	case "string":
		return sqlType{kind: kindString}, true
	case "boolean":
		return sqlType{kind: kindBool}, true
	}
	return sqlType{}, false
}

// checkConstraintsCompile type-checks every constraint against the table
// schema alone (what Writable can say before any file is seen).
func checkConstraintsCompile(cs []tableConstraint, schema *delta.StructType) error {
	for _, c := range cs {
		resolve := func(path []string) (int, sqlType, error) {
			_, f, err := resolveField(schema, path)
			if err != nil {
				return 0, sqlType{}, err
			}
			t, ok := columnType(f.Type)
			if !ok {
				return 0, sqlType{}, fmt.Errorf("column %s of type %s is outside the supported subset", dotted(path), f.Type)
			}
			return 0, t, nil
		}
		if err := compileConstraint(c, resolve); err != nil {
			return err
		}
	}
	return nil
}

func compileConstraint(c tableConstraint, resolve columnResolver) error {
	_, t, err := compileSQL(c.expr, resolve)
	if err == nil && t.kind != kindBool && t.kind != kindNull {
		err = fmt.Errorf("its value is a %s, not a boolean", t)
	}
	if err != nil {
		return fmt.Errorf("%s is outside the SQL subset deltafs evaluates: %v", c.label, err)
	}
	return nil
}

// rowSource is where one column a constraint reads comes from: a leaf of
// the file (leaf >= 0), else the constant value (a partition value, or
// null for a nullable column missing from the file).
type rowSource struct {
	name  string // the logical path, for messages
	leaf  *statLeaf
	value sqlValue
}

// checkConstraints evaluates every constraint over every row of the file
// and refuses the file at the first row where one is not true (false or
// null, as Spark refuses), with the values of the columns it reads.
func (p *prepared) checkConstraints(cs []tableConstraint, schema *delta.StructType, pq *pqFile, leaves []statLeaf, partCols map[string]bool, mode delta.ColumnMappingMode) error {
	for _, c := range cs {
		var srcs []rowSource
		slots := map[string]int{}
		resolve := func(path []string) (int, sqlType, error) {
			logical, f, err := resolveField(schema, path)
			if err != nil {
				return 0, sqlType{}, err
			}
			t, ok := columnType(f.Type)
			if !ok {
				return 0, sqlType{}, fmt.Errorf("column %s of type %s is outside the supported subset", dotted(path), f.Type)
			}
			key := strings.ToLower(dotted(logical))
			if s, ok := slots[key]; ok {
				return s, t, nil
			}
			src, err := p.source(logical, f, t, leaves, partCols, mode)
			if err != nil {
				return 0, t, err
			}
			slots[key] = len(srcs)
			srcs = append(srcs, src)
			return slots[key], t, nil
		}
		fn, _, err := compileSQL(c.expr, resolve)
		if err != nil {
			return fmt.Errorf("%w: %s is outside the SQL subset deltafs evaluates: %v", ErrNotWritable, c.label, err)
		}
		if err := p.evalRows(c, fn, srcs, pq); err != nil {
			return err
		}
	}
	return nil
}

// source finds where a column's values come from for this file.
func (p *prepared) source(logical []string, f *delta.StructField, t sqlType, leaves []statLeaf, partCols map[string]bool, mode delta.ColumnMappingMode) (rowSource, error) {
	name := dotted(logical)
	if len(logical) == 1 && partCols[strings.ToLower(logical[0])] {
		v, err := textValue(p.partValues[f.PhysicalName(mode)], t)
		return rowSource{name: name, value: v}, err
	}
	for i := range leaves {
		if strings.EqualFold(dotted(leaves[i].logical), name) {
			return rowSource{name: name, leaf: &leaves[i]}, nil
		}
	}
	return rowSource{name: name, value: nullValue}, nil // a nullable column the file lacks
}

// textValue reads a canonical partition value as a value of type t.
func textValue(s *string, t sqlType) (sqlValue, error) {
	if s == nil {
		return nullValue, nil
	}
	switch t.kind {
	case kindString:
		return strValue(*s), nil
	case kindBool:
		return boolValue(strings.EqualFold(*s, "true")), nil
	case kindFloat:
		r, ok := new(big.Rat).SetString(*s)
		if !ok {
			return nullValue, fmt.Errorf("partition value %q is not a number", *s)
		}
		f, _ := r.Float64()
		return floatValue(f), nil
	}
	r, ok := new(big.Rat).SetString(*s)
	if !ok {
		return nullValue, fmt.Errorf("partition value %q is not a number", *s)
	}
	return exactValue(r), nil
}

// evalRows runs one compiled constraint over the file, a row group at a
// time (the columns it reads are decoded whole for the row group).
func (p *prepared) evalRows(c tableConstraint, fn evalFn, srcs []rowSource, pq *pqFile) error {
	var base int64
	for g, rg := range pq.pf.RowGroups() {
		n := rg.NumRows()
		cols := make([][]sqlValue, len(srcs))
		for i, s := range srcs {
			if s.leaf == nil {
				continue
			}
			vals, err := leafValues(rg.ColumnChunks()[s.leaf.node.leaf], *s.leaf, n)
			if err != nil {
				return invalidf("%s: read column %s (row group %d) for %s: %v", p.display, s.name, g, c.label, err)
			}
			cols[i] = vals
		}
		row := make([]sqlValue, len(srcs))
		for r := range n {
			for i, s := range srcs {
				row[i] = s.value
				if s.leaf != nil {
					row[i] = cols[i][r]
				}
			}
			v, err := fn(row)
			if err != nil || v.isNull() || !v.b {
				return p.violation(c, base+r, srcs, row, err)
			}
		}
		base += n
	}
	return nil
}

func (p *prepared) violation(c tableConstraint, r int64, srcs []rowSource, row []sqlValue, err error) error {
	vals := make([]string, len(srcs))
	for i, s := range srcs {
		vals[i] = s.name + " = " + row[i].String()
	}
	why := "violated"
	if err != nil {
		why = "cannot be evaluated exactly (" + err.Error() + ")"
	}
	return invalidf("%s: %s %s by row %d of the file (counting from 1), with values: %s",
		p.display, c.label, why, r+1, strings.Join(vals, ", "))
}

// leafValues decodes the n values of a struct-only leaf in one row group.
func leafValues(cc parquet.ColumnChunk, l statLeaf, n int64) ([]sqlValue, error) {
	out := make([]sqlValue, 0, n)
	var convErr error
	err := eachValue(cc, func(v parquet.Value) {
		sv, err := leafValue(v, l)
		if err != nil && convErr == nil {
			convErr = err
		}
		out = append(out, sv)
	})
	if err == nil {
		err = convErr
	}
	if err == nil && int64(len(out)) != n {
		err = fmt.Errorf("%d values for %d rows", len(out), n)
	}
	return out, err
}

// leafValue converts one Parquet value of the leaf's Delta type.
func leafValue(v parquet.Value, l statLeaf) (sqlValue, error) {
	if v.IsNull() {
		return nullValue, nil
	}
	if d, ok := l.typ.(delta.DecimalType); ok {
		u := decimalUnscaled(l.node.el.Type.V, v.Bytes())
		if u == nil {
			return nullValue, fmt.Errorf("bad decimal value")
		}
		return exactValue(new(big.Rat).SetFrac(u, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil))), nil
	}
	switch l.typ.String() {
	case "byte", "short", "integer":
		return intValue(int64(v.Int32())), nil
	case "long":
		return intValue(v.Int64()), nil
	case "float":
		return floatValue(float64(v.Float())), nil
	case "double":
		return floatValue(v.Double()), nil
	case "string":
		return strValue(string(v.ByteArray())), nil
	case "boolean":
		return boolValue(v.Boolean()), nil
	}
	return nullValue, fmt.Errorf("type %s is outside the supported subset", l.typ)
}
