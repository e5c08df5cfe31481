package writeback

import (
	"fmt"
	"io"
	"math/big"
	"os"
	"reflect"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/durable"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// The type rule of an append (docs/user-guide.md, "Types"): a file column
// must have the table column's type, or a narrower type that widens to it
// without loss as the Delta protocol's "Type Widening" section lists:
//
//	byte -> short -> integer -> long
//	float -> double; byte, short, integer -> double
//	date -> timestamp_ntz
//	decimal(p, s) -> decimal(p+k1, s+k2) with k1 >= k2 >= 0
//	byte, short, integer -> decimal(10+k1, k2); long -> decimal(20+k1, k2)
//
// A widened column is re-encoded to the table's type while the file is
// staged (widenFile), so the table only ever holds the physical types its
// schema allows; statistics and checks run on the re-encoded file. Columns
// inside lists and maps must match exactly.

// fileType is the Delta type a Parquet leaf holds as written, for the
// widening rule; nil when it is none the rule knows.
func fileType(el *format.SchemaElement) delta.DataType {
	if p, s, ok := decimalOf(el); ok {
		return delta.DecimalType{Precision: p, Scale: s}
	}
	name := ""
	switch el.Type.V {
	case format.Int32:
		switch {
		case isDate(el):
			name = "date"
		case intWidth(el) == 8:
			name = "byte"
		case intWidth(el) == 16:
			name = "short"
		case intAnnotation(el, 32):
			name = "integer"
		}
	case format.Int64:
		if intAnnotation(el, 64) {
			name = "long"
		}
	case format.Float:
		if noAnnotation(el) {
			name = "float"
		}
	case format.Double:
		if noAnnotation(el) {
			name = "double"
		}
	}
	if name == "" {
		return nil
	}
	return delta.PrimitiveType{Name: name}
}

// intRank orders the integer types by width (0: not an integer type).
func intRank(t delta.DataType) int {
	if p, ok := t.(delta.PrimitiveType); ok {
		switch p.Name {
		case "byte":
			return 1
		case "short":
			return 2
		case "integer":
			return 3
		case "long":
			return 4
		}
	}
	return 0
}

// widens reports whether values of type from convert to type to without
// loss by the protocol's Type Widening rules (from != to).
func widens(from, to delta.DataType) bool {
	fr, tr := intRank(from), intRank(to)
	if fr > 0 && tr > 0 {
		return fr < tr
	}
	if d, ok := to.(delta.DecimalType); ok {
		if fd, ok := from.(delta.DecimalType); ok {
			k1, k2 := d.Precision-fd.Precision, d.Scale-fd.Scale
			return k2 >= 0 && k1 >= k2 && (k1 > 0 || k2 > 0)
		}
		switch {
		case fr >= 1 && fr <= 3:
			return d.Precision-10 >= d.Scale && d.Scale >= 0
		case fr == 4:
			return d.Precision-20 >= d.Scale && d.Scale >= 0
		}
		return false
	}
	ft, ok1 := from.(delta.PrimitiveType)
	tt, ok2 := to.(delta.PrimitiveType)
	if !ok1 || !ok2 {
		return false
	}
	switch tt.Name {
	case "double":
		return ft.Name == "float" || (fr >= 1 && fr <= 3)
	case "timestamp_ntz":
		return ft.Name == "date"
	}
	return false
}

// widening is one leaf of a staged file to re-encode to the table's type.
type widening struct {
	leaf int // column index in the file
	from delta.DataType
	to   delta.DataType
	path string // logical, for messages
}

// widenFile writes a copy of the Parquet file at src into dir with the
// leaves of ws re-encoded to their table types, keeping every other
// column, the row groups and the codec, and returns its path.
func widenFile(src, dir string, ws []widening, display string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", display, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", display, err)
	}
	pf, err := parquet.OpenFile(in, fi.Size())
	if err != nil {
		return "", invalidf("%s: %v", display, err)
	}
	byLeaf := map[int]widening{}
	nodes := map[int]parquet.Node{}
	for _, w := range ws {
		byLeaf[w.leaf] = w
		nodes[w.leaf] = parquetNodeOf(w.to)
	}
	leaf := 0
	root := replaceLeaves(pf.Schema(), nodes, &leaf)
	schema := parquet.NewSchema(pf.Schema().Name(), root)
	if dir == "" {
		dir = os.TempDir()
	}
	// 0666 less the umask: the copy is linked into the table as it is.
	out, err := durable.CreateTemp(dir, "deltafs-widened-", ".parquet")
	if err != nil {
		return "", fmt.Errorf("widen %s: %w", display, err)
	}
	path := out.Name()
	err = copyWidened(pf, out, schema, byLeaf)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("%s: re-encode widened columns: %w", display, err)
	}
	return path, nil
}

// copyWidened copies the rows of pf to out, one row group per source row
// group, converting the values of the leaves in ws.
func copyWidened(pf *parquet.File, out io.Writer, schema *parquet.Schema, ws map[int]widening) error {
	opts := []parquet.WriterOption{schema, parquet.CreatedBy("deltafs", "", "")}
	if rgs := pf.Metadata().RowGroups; len(rgs) > 0 && len(rgs[0].Columns) > 0 {
		opts = append(opts, parquet.Compression(parquet.LookupCompressionCodec(rgs[0].Columns[0].MetaData.Codec)))
	}
	w := parquet.NewWriter(out, opts...)
	buf := make([]parquet.Row, 256)
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		for {
			n, err := rows.ReadRows(buf)
			for _, row := range buf[:n] {
				for i, v := range row {
					if wd, ok := ws[v.Column()]; ok && !v.IsNull() {
						wv, werr := widenValue(v, wd)
						if werr != nil {
							rows.Close()
							return werr
						}
						row[i] = wv
					}
				}
			}
			if _, werr := w.WriteRows(buf[:n]); werr != nil {
				rows.Close()
				return werr
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				rows.Close()
				return err
			}
		}
		rows.Close()
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return w.Close()
}

// widenValue converts one non-null value of type w.from to w.to.
func widenValue(v parquet.Value, w widening) (parquet.Value, error) {
	var out parquet.Value
	switch to := w.to.(type) {
	case delta.DecimalType:
		u, err := unscaled(v, w.from)
		if err != nil {
			return v, fmt.Errorf("column %s: %w", w.path, err)
		}
		u.Mul(u, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(to.Scale-scaleOf(w.from))), nil))
		out = decimalValue(u, to.Precision)
	case delta.PrimitiveType:
		switch to.Name {
		case "long":
			out = parquet.Int64Value(int64(v.Int32()))
		case "integer", "short":
			out = parquet.Int32Value(v.Int32())
		case "double":
			if p, _ := w.from.(delta.PrimitiveType); p.Name == "float" {
				out = parquet.DoubleValue(float64(v.Float())) // exact, as Spark's cast
			} else {
				out = parquet.DoubleValue(float64(v.Int32()))
			}
		case "timestamp_ntz": // from date: days -> microseconds
			out = parquet.Int64Value(int64(v.Int32()) * 86_400_000_000)
		}
	}
	return out.Level(v.RepetitionLevel(), v.DefinitionLevel(), v.Column()), nil
}

func scaleOf(t delta.DataType) int {
	if d, ok := t.(delta.DecimalType); ok {
		return d.Scale
	}
	return 0
}

// unscaled returns the unscaled integer of a decimal or integer value.
func unscaled(v parquet.Value, from delta.DataType) (*big.Int, error) {
	switch v.Kind() {
	case parquet.Int32:
		return big.NewInt(int64(v.Int32())), nil
	case parquet.Int64:
		return big.NewInt(v.Int64()), nil
	case parquet.ByteArray, parquet.FixedLenByteArray:
		b := v.ByteArray()
		u := new(big.Int).SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 { // two's complement
			u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		return u, nil
	}
	return nil, fmt.Errorf("unexpected %s value for %s", v.Kind(), from)
}

// decimalValue encodes an unscaled value in the physical type
// parquetNodeOf gives a decimal of this precision.
func decimalValue(u *big.Int, precision int) parquet.Value {
	switch {
	case precision <= 9:
		return parquet.Int32Value(int32(u.Int64()))
	case precision <= 18:
		return parquet.Int64Value(u.Int64())
	}
	n := decimalBytes(precision)
	b := make([]byte, n)
	if u.Sign() >= 0 {
		u.FillBytes(b)
	} else { // two's complement of n bytes
		t := new(big.Int).Add(u, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
		t.FillBytes(b)
	}
	return parquet.FixedLenByteArrayValue(b)
}

// decimalBytes is the fewest bytes holding every unscaled value of a
// decimal of this precision (as Spark sizes FIXED_LEN_BYTE_ARRAY).
func decimalBytes(precision int) int {
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	for n := 1; ; n++ {
		if new(big.Int).Lsh(big.NewInt(1), uint(8*n-1)).Cmp(limit) >= 0 {
			return n
		}
	}
}

// parquetNodeOf is the leaf a widened column is written as: the encoding
// Spark writes for the table type (INT64 for long, DOUBLE, INT64
// microseconds for timestamp_ntz, INT32/INT64/FIXED_LEN_BYTE_ARRAY by
// precision for decimals).
func parquetNodeOf(t delta.DataType) parquet.Node {
	if d, ok := t.(delta.DecimalType); ok {
		switch {
		case d.Precision <= 9:
			return parquet.Decimal(d.Scale, d.Precision, parquet.Int32Type)
		case d.Precision <= 18:
			return parquet.Decimal(d.Scale, d.Precision, parquet.Int64Type)
		}
		return parquet.Decimal(d.Scale, d.Precision, parquet.FixedLenByteArrayType(decimalBytes(d.Precision)))
	}
	switch t.(delta.PrimitiveType).Name {
	case "long":
		return parquet.Int(64)
	case "integer":
		return parquet.Int(32)
	case "short":
		return parquet.Int(16)
	case "double":
		return parquet.Leaf(parquet.DoubleType)
	case "timestamp_ntz":
		return parquet.TimestampAdjusted(parquet.Microsecond, false)
	}
	panic("writeback: no widening to " + t.String())
}

// replaceLeaves returns n with the leaves whose column index is in repl
// replaced (same name, repetition and field id); *leaf counts the leaves
// seen, in column order. Groups keep their fields in file order.
func replaceLeaves(n parquet.Node, repl map[int]parquet.Node, leaf *int) parquet.Node {
	if n.Leaf() {
		r, ok := repl[*leaf]
		*leaf++
		if !ok {
			return n
		}
		switch {
		case n.Optional():
			r = parquet.Optional(r)
		case n.Repeated():
			r = parquet.Repeated(r)
		default:
			r = parquet.Required(r)
		}
		if id := n.ID(); id != 0 {
			r = parquet.FieldID(r, id)
		}
		return r
	}
	fields := n.Fields()
	out := make([]parquet.Field, len(fields))
	for i, f := range fields {
		out[i] = namedField{Node: replaceLeaves(f, repl, leaf), name: f.Name()}
	}
	return orderedGroup{Node: n, fields: out}
}

// orderedGroup is a group node with its fields replaced, in order
// (parquet.Group would sort them by name).
type orderedGroup struct {
	parquet.Node
	fields []parquet.Field
}

func (g orderedGroup) Fields() []parquet.Field { return g.fields }

// namedField gives a node its field name in the parent group.
type namedField struct {
	parquet.Node
	name string
}

func (f namedField) Name() string { return f.name }

// Value is not used: rows are copied as parquet.Row values, never
// through Go structs.
func (f namedField) Value(base reflect.Value) reflect.Value { return reflect.Value{} }
