package integration

// Reading Parquet files as a legacy tool would, into canonical rows that
// compare equal whenever they hold equal data, whatever the physical types.
//
// A canonical value is one of: nil, bool, int64, float64, string (also for
// binary, dates, timestamps and decimals), []any (lists), map[string]any
// (structs) and mapPairs (maps). canonJSON turns any of them into one string.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// errShape reports a row whose levels do not fit the file's schema.
var errShape = errors.New("row does not match the schema")

// parquetFile is an open Parquet file read through parquet-go, with its
// top-level column names in schema order and their nodes.
type parquetFile struct {
	path  string
	f     *os.File
	pf    *parquet.File
	root  *colNode
	cols  []string
	nodes map[string]parquet.Node
}

// openParquet opens the Parquet file at path and reads its footer.
func openParquet(path string) (*parquetFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.Size() == 0 {
		err = errors.New("empty file")
	}
	var pf *parquet.File
	if err == nil {
		pf, err = parquet.OpenFile(f, st.Size())
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open parquet %s: %w", path, err)
	}
	p := &parquetFile{path: path, f: f, pf: pf, nodes: map[string]parquet.Node{}}
	p.root = buildColNode("", pf.Schema(), new(int))
	for _, k := range p.root.kids {
		p.cols = append(p.cols, k.name)
		p.nodes[k.name] = k.node
	}
	return p, nil
}

// Close closes the file.
func (p *parquetFile) Close() error { return p.f.Close() }

// each calls fn with every row in file order, as a map from top-level
// column name to canonical value; fn must not keep the map, which is
// reused. It fails when the rows read differ from the footer's count.
func (p *parquetFile) each(fn func(row map[string]any)) error {
	row := make(map[string]any, len(p.cols))
	var n int64
	for i, rg := range p.pf.RowGroups() {
		err := readRowGroup(rg, p.root, func(cols [][]parquet.Value) error {
			if err := p.root.record(cols, row); err != nil {
				return fmt.Errorf("row %d: %w", n, err)
			}
			fn(row)
			n++
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: row group %d: %w", p.path, i, err)
		}
	}
	if n != p.pf.NumRows() {
		return fmt.Errorf("%s: read %d rows, footer says %d", p.path, n, p.pf.NumRows())
	}
	return nil
}

// readRowGroup calls fn with the values of each row of rg, by leaf column.
func readRowGroup(rg parquet.RowGroup, root *colNode, fn func(cols [][]parquet.Value) error) error {
	rows := rg.Rows()
	defer rows.Close()
	buf := make([]parquet.Row, 128)
	cols := make([][]parquet.Value, root.end)
	for {
		n, err := rows.ReadRows(buf)
		for _, row := range buf[:n] {
			clear(cols)
			row.Range(func(c int, vals []parquet.Value) bool {
				if c < len(cols) {
					cols[c] = vals
				}
				return true
			})
			if ferr := fn(cols); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// colNode is a schema node with the range [first, end) of leaf column
// indexes under it (a leaf has end == first+1).
type colNode struct {
	name       string
	node       parquet.Node
	first, end int
	kids       []*colNode
}

// buildColNode numbers the leaves under n depth-first, as Parquet does.
func buildColNode(name string, n parquet.Node, next *int) *colNode {
	c := &colNode{name: name, node: n, first: *next}
	if n.Leaf() {
		*next++
	}
	for _, f := range n.Fields() {
		c.kids = append(c.kids, buildColNode(f.Name(), f, next))
	}
	c.end = *next
	return c
}

// sub returns the part of cols (the leaves of c) that belongs to kid k.
func (c *colNode) sub(k *colNode, cols [][]parquet.Value) [][]parquet.Value {
	return cols[k.first-c.first : k.end-c.first]
}

// record assembles one row from each leaf's values into m, a map of
// top-level column name to canonical value.
func (c *colNode) record(cols [][]parquet.Value, m map[string]any) error {
	for _, k := range c.kids {
		v, err := k.value(0, 0, c.sub(k, cols))
		if err != nil {
			return fmt.Errorf("column %s: %w", k.name, err)
		}
		m[k.name] = v
	}
	return nil
}

// value assembles c's value for one instance of its parent, whose
// definition level is def and repetition depth rep (Dremel assembly).
func (c *colNode) value(def, rep int, cols [][]parquet.Value) (any, error) {
	if len(cols) == 0 {
		return nil, nil // a group without leaves
	}
	if len(cols[0]) == 0 {
		return nil, fmt.Errorf("%w: no values for %s", errShape, c.name)
	}
	switch {
	case c.node.Optional():
		if cols[0][0].DefinitionLevel() < def+1 {
			return nil, nil
		}
		return c.required(def+1, rep, cols)
	case c.node.Repeated():
		parts, err := splitRepeated(cols, def+1, rep+1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		list := make([]any, 0, len(parts))
		for _, p := range parts {
			v, err := c.required(def+1, rep+1, p)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		return list, nil
	}
	return c.required(def, rep, cols)
}

// splitRepeated splits the values of one repeated field instance into its
// elements: a new element starts at each value whose repetition level is at
// most rep. A first value with definition level below def means an empty
// list.
func splitRepeated(cols [][]parquet.Value, def, rep int) ([][][]parquet.Value, error) {
	if cols[0][0].DefinitionLevel() < def {
		return nil, nil
	}
	var parts [][][]parquet.Value
	for ci, col := range cols {
		n := 0
		for i := range col {
			if i > 0 && col[i].RepetitionLevel() > rep {
				continue
			}
			if ci == 0 {
				parts = append(parts, make([][]parquet.Value, len(cols)))
			}
			if n >= len(parts) {
				return nil, fmt.Errorf("%w: leaf %d has more elements than leaf 0", errShape, ci)
			}
			j := i + 1
			for j < len(col) && col[j].RepetitionLevel() > rep {
				j++
			}
			parts[n][ci] = col[i:j]
			n++
		}
		if n != len(parts) {
			return nil, fmt.Errorf("%w: leaf %d has %d elements, leaf 0 has %d", errShape, ci, n, len(parts))
		}
	}
	return parts, nil
}

// required assembles a present (non-null) instance of c.
func (c *colNode) required(def, rep int, cols [][]parquet.Value) (any, error) {
	if c.node.Leaf() {
		return leafValue(cols[0][0], c.node.Type())
	}
	var lt *format.LogicalType
	if t := c.node.Type(); t != nil {
		lt = t.LogicalType()
	}
	if lt != nil && len(c.kids) == 1 && c.kids[0].node.Repeated() {
		switch lt.Value.(type) {
		case *format.ListType:
			return c.list(def, rep, cols)
		case *format.MapType:
			return c.mapValue(def, rep, cols)
		}
	}
	m := make(map[string]any, len(c.kids))
	for _, k := range c.kids {
		v, err := k.value(def, rep, c.sub(k, cols))
		if err != nil {
			return nil, err
		}
		m[k.name] = v
	}
	return m, nil
}

// list assembles a LIST-annotated group, in the standard three-level form
// or any of the legacy two-level forms the Parquet spec's
// backward-compatibility rules describe.
func (c *colNode) list(def, rep int, cols [][]parquet.Value) (any, error) {
	r := c.kids[0]
	wrapper := !r.node.Leaf() && len(r.kids) == 1 && r.name != "array" && r.name != c.name+"_tuple"
	parts, err := splitRepeated(cols, def+1, rep+1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	list := make([]any, 0, len(parts))
	for _, p := range parts {
		var v any
		if wrapper {
			v, err = r.kids[0].value(def+1, rep+1, p)
		} else {
			v, err = r.required(def+1, rep+1, p)
		}
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
	return list, nil
}

// mapPairs is a canonical map: its key/value pairs sorted by canonJSON of
// the key.
type mapPairs [][2]any

// mapValue assembles a MAP-annotated group (repeated key_value {key, value}).
func (c *colNode) mapValue(def, rep int, cols [][]parquet.Value) (any, error) {
	kv := c.kids[0]
	if len(kv.kids) != 2 {
		return nil, fmt.Errorf("%w: map %s has %d key_value fields", errShape, c.name, len(kv.kids))
	}
	parts, err := splitRepeated(cols, def+1, rep+1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	pairs := make(mapPairs, 0, len(parts))
	for _, p := range parts {
		var pair [2]any
		for i, k := range kv.kids {
			if pair[i], err = k.value(def+1, rep+1, kv.sub(k, p)); err != nil {
				return nil, err
			}
		}
		pairs = append(pairs, pair)
	}
	slices.SortFunc(pairs, func(a, b [2]any) int { return strings.Compare(canonJSON(a[0]), canonJSON(b[0])) })
	return pairs, nil
}

// leafValue canonicalizes one non-null leaf value of Parquet type t.
func leafValue(v parquet.Value, t parquet.Type) (any, error) {
	if v.IsNull() {
		return nil, nil
	}
	if lt := t.LogicalType(); lt != nil {
		switch l := lt.Value.(type) {
		case *format.DecimalType:
			return decimalValue(v, int(l.Scale))
		case *format.DateType:
			return time.Unix(int64(v.Int32())*86400, 0).UTC().Format(time.DateOnly), nil
		case *format.TimestampType:
			return timestampValue(v.Int64(), l.Unit.Value)
		case *format.IntType:
			return intValue(v, l)
		}
	}
	switch v.Kind() {
	case parquet.Boolean:
		return v.Boolean(), nil
	case parquet.Int32:
		return int64(v.Int32()), nil
	case parquet.Int64:
		return v.Int64(), nil
	case parquet.Int96:
		i := v.Int96()
		nanos := int64(uint64(i[1])<<32 | uint64(i[0]))
		days := int64(i[2]) - 2440588 // Julian day of 1970-01-01
		return formatTime(time.Unix(days*86400, nanos)), nil
	case parquet.Float:
		return float64(v.Float()), nil
	case parquet.Double:
		return v.Double(), nil
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return string(v.ByteArray()), nil
	}
	return nil, fmt.Errorf("%w: unsupported physical type %v", errShape, v.Kind())
}

// intValue canonicalizes an INT-annotated value (signed or unsigned, any
// width) as int64; uint64 values above MaxInt64 become decimal strings.
func intValue(v parquet.Value, l *format.IntType) (any, error) {
	switch {
	case l.IsSigned && v.Kind() == parquet.Int32:
		return int64(v.Int32()), nil
	case l.IsSigned:
		return v.Int64(), nil
	case v.Kind() == parquet.Int32:
		return int64(uint32(v.Int32())), nil
	case v.Int64() >= 0:
		return v.Int64(), nil
	}
	return strconv.FormatUint(uint64(v.Int64()), 10), nil
}

// timestampValue canonicalizes a count of units since the Unix epoch.
func timestampValue(n int64, unit format.TimeUnitValue) (any, error) {
	switch unit.(type) {
	case *format.MilliSeconds:
		return formatTime(time.UnixMilli(n)), nil
	case *format.MicroSeconds:
		return formatTime(time.UnixMicro(n)), nil
	case *format.NanoSeconds:
		return formatTime(time.Unix(0, n)), nil
	}
	return nil, fmt.Errorf("%w: timestamp unit %v", errShape, unit)
}

// formatTime is the canonical form of a timestamp: RFC 3339 in UTC with
// as many fractional digits as needed.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// decimalValue canonicalizes a decimal stored as INT32, INT64 or big-endian
// two's complement bytes, with the given scale, as an exact decimal string.
func decimalValue(v parquet.Value, scale int) (any, error) {
	u := new(big.Int)
	switch v.Kind() {
	case parquet.Int32:
		return formatDecimal(strconv.FormatInt(int64(v.Int32()), 10), scale), nil
	case parquet.Int64:
		return formatDecimal(strconv.FormatInt(v.Int64(), 10), scale), nil
	case parquet.ByteArray, parquet.FixedLenByteArray:
		b := v.ByteArray()
		u.SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 {
			u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
	default:
		return nil, fmt.Errorf("%w: decimal stored as %v", errShape, v.Kind())
	}
	return formatDecimal(u.String(), scale), nil
}

// formatDecimal writes unscaled (a base-10 integer) * 10^-scale with
// exactly scale fraction digits ("-1.50" for "-150", 2).
func formatDecimal(unscaled string, scale int) string {
	s, neg := strings.CutPrefix(unscaled, "-")
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// canonJSON is a deterministic text form of a canonical value: struct keys
// sorted, map pairs sorted by key, floats in shortest form (NaN equal to
// NaN), strings quoted so that "1" and 1 differ.
func canonJSON(v any) string {
	var b bytes.Buffer
	writeCanon(&b, v)
	return b.String()
}

func writeCanon(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		writeFloat(b, x)
	case string:
		b.WriteString(strconv.Quote(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanon(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		writeStruct(b, x)
	case mapPairs:
		b.WriteString("map[")
		for i, p := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanon(b, p[0])
			b.WriteByte(':')
			writeCanon(b, p[1])
		}
		b.WriteByte(']')
	default:
		fmt.Fprintf(b, "?%T(%v)", v, v)
	}
}

func writeFloat(b *bytes.Buffer, f float64) {
	switch {
	case math.IsNaN(f):
		b.WriteString("NaN")
	case math.IsInf(f, 0):
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	default:
		b.WriteString("f" + strconv.FormatFloat(f, 'g', -1, 64))
	}
}

func writeStruct(b *bytes.Buffer, m map[string]any) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(k) + ":")
		writeCanon(b, m[k])
	}
	b.WriteByte('}')
}

// hiveNull is the directory value Hive and Spark use for a null partition.
const hiveNull = "__HIVE_DEFAULT_PARTITION__"

// unescapePathName undoes Spark's partition path escaping: every %XX (two
// hex digits) becomes that byte; anything else, '+' included, is literal.
func unescapePathName(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// partitionValue types an unescaped partition directory value by the
// column's Parquet node (from the expected content's schema) and returns it
// canonical, so that it compares equal to the same value read from Parquet.
// Timestamps without an offset are read in loc (UTC when nil), except
// timestamp_ntz ones, always wall-clock times in UTC.
func partitionValue(raw string, n parquet.Node, loc *time.Location) (any, error) {
	if raw == hiveNull {
		return nil, nil
	}
	if !n.Leaf() {
		return nil, fmt.Errorf("partition value %q for a nested column", raw)
	}
	t := n.Type()
	if lt := t.LogicalType(); lt != nil {
		switch l := lt.Value.(type) {
		case *format.DecimalType:
			return parseDecimal(raw, int(l.Scale))
		case *format.DateType:
			d, err := time.Parse(time.DateOnly, raw)
			return d.Format(time.DateOnly), err
		case *format.TimestampType:
			if !l.IsAdjustedToUTC {
				loc = nil
			}
			return parseTimestamp(raw, loc)
		case *format.StringType, *format.EnumType, *format.JsonType:
			return raw, nil
		}
	}
	switch t.Kind() {
	case parquet.Boolean:
		return strconv.ParseBool(raw)
	case parquet.Int32, parquet.Int64:
		return strconv.ParseInt(raw, 10, 64)
	case parquet.Int96:
		return parseTimestamp(raw, loc)
	case parquet.Float:
		f, err := strconv.ParseFloat(raw, 32)
		return float64(float32(f)), err
	case parquet.Double:
		return strconv.ParseFloat(raw, 64)
	}
	return raw, nil
}

// parseTimestamp reads a Delta timestamp partition value ("2021-09-08
// 11:11:11[.ffffff]", or RFC 3339), in loc (UTC when nil) unless it
// carries an offset.
func parseTimestamp(raw string, loc *time.Location) (any, error) {
	if loc == nil {
		loc = time.UTC
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if ts, err := time.ParseInLocation(layout, raw, loc); err == nil {
			return formatTime(ts), nil
		}
	}
	return nil, fmt.Errorf("bad timestamp partition value %q", raw)
}

// parseDecimal reads a decimal partition value into the canonical form for
// the given scale; a value with more fraction digits than scale is an error.
func parseDecimal(raw string, scale int) (any, error) {
	r, ok := new(big.Rat).SetString(raw)
	if !ok {
		return nil, fmt.Errorf("bad decimal partition value %q", raw)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	if !r.IsInt() {
		return nil, fmt.Errorf("decimal partition value %q has more than %d fraction digits", raw, scale)
	}
	return formatDecimal(r.Num().String(), scale), nil
}
