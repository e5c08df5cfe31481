package writeback

import (
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
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
// keys matched case-insensitively, as Spark matches them; every key is
// enforced, two that differ only in case too, in the order of their keys),
// column invariants and the length checks of CHAR/VARCHAR columns,
// parsed. A constraint outside the supported subset is an error naming it.
func tableConstraints(m *delta.Metadata, schema *delta.StructType) ([]tableConstraint, error) {
	var out []tableConstraint
	var keys []string
	for k := range m.Configuration {
		if len(k) > len(configConstraintPrefix) && strings.EqualFold(k[:len(configConstraintPrefix)], configConstraintPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := strings.ToLower(keys[i]), strings.ToLower(keys[j])
		return a < b || a == b && keys[i] < keys[j]
	})
	for _, k := range keys {
		name, text := strings.ToLower(k[len(configConstraintPrefix):]), m.Configuration[k]
		c, err := newConstraint(fmt.Sprintf("CHECK constraint %s (%s)", name, text), text)
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
		if cv, ok, err := charVarcharCheck(f, fp, inContainer); err != nil {
			return nil, err
		} else if ok {
			out = append(out, cv)
		}
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

// evalRows runs one compiled constraint over the file, row by row: the
// columns it reads are decoded in step, a page at a time (a struct-only
// leaf has one value per row), so memory stays that of a few pages.
func (p *prepared) evalRows(c tableConstraint, fn evalFn, srcs []rowSource, pq *pqFile) error {
	var base int64
	for g, rg := range pq.pf.RowGroups() {
		err := p.evalGroup(c, fn, srcs, rg, base, g)
		if err != nil {
			return err
		}
		base += rg.NumRows()
	}
	return nil
}

func (p *prepared) evalGroup(c tableConstraint, fn evalFn, srcs []rowSource, rg parquet.RowGroup, base int64, g int) error {
	curs := make([]*valueCursor, len(srcs))
	for i, s := range srcs {
		if s.leaf != nil {
			curs[i] = newValueCursor(rg.ColumnChunks()[s.leaf.node.Leaf])
			defer curs[i].close()
		}
	}
	row := make([]sqlValue, len(srcs))
	for r := range rg.NumRows() {
		for i, s := range srcs {
			row[i] = s.value
			if curs[i] == nil {
				continue
			}
			v, err := curs[i].next()
			if err == nil {
				row[i], err = leafValue(v, *s.leaf)
			}
			if err != nil {
				return invalidf("%s: read column %s (row group %d) for %s: %v", p.display, s.name, g, c.label, err)
			}
		}
		v, err := fn(row)
		if err != nil || v.isNull() || !v.b {
			return p.violation(c, base+r, srcs, row, err)
		}
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

// valueCursor reads a column chunk's values one at a time, a page and a
// buffer of values at a time. A value is valid until the next call.
type valueCursor struct {
	pages parquet.Pages
	page  parquet.Page
	vr    parquet.ValueReader
	buf   []parquet.Value
	i, n  int
}

func newValueCursor(cc parquet.ColumnChunk) *valueCursor {
	return &valueCursor{pages: cc.Pages(), buf: make([]parquet.Value, 1024)}
}

// next returns the next value; corrupt pages (parquet-go panics on some)
// are errors.
func (c *valueCursor) next() (v parquet.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decode pages: %v", r)
		}
	}()
	for c.i == c.n {
		if c.vr != nil {
			n, err := c.vr.ReadValues(c.buf)
			c.i, c.n = 0, n
			if n > 0 {
				break
			}
			if err != nil && err != io.EOF {
				return v, err
			}
			c.vr = nil
		}
		if c.page != nil {
			parquet.Release(c.page)
			c.page = nil
		}
		pg, err := c.pages.ReadPage()
		if err == io.EOF {
			return v, fmt.Errorf("fewer values than rows")
		}
		if err != nil {
			return v, err
		}
		c.page, c.vr = pg, pg.Values()
	}
	c.i++
	return c.buf[c.i-1], nil
}

func (c *valueCursor) close() {
	if c.page != nil {
		parquet.Release(c.page)
	}
	c.pages.Close()
}

// leafValue converts one Parquet value of the leaf's Delta type.
func leafValue(v parquet.Value, l statLeaf) (sqlValue, error) {
	if v.IsNull() {
		return nullValue, nil
	}
	if d, ok := l.typ.(delta.DecimalType); ok {
		u := decimalUnscaled(l.node.Element.Type.V, v.Bytes())
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
