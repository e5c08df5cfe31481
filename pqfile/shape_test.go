package pqfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// narrowRow is a file written before the table grew: it lacks "added" and "p", and holds
// "small" as INT(8) where the table now says INT(32).
type narrowRow struct {
	ID    int64  `parquet:"id"`
	Name  string `parquet:"name,optional"`
	Small int8   `parquet:"small"`
	Gone  int64  `parquet:"gone"` // dropped from the table
}

func narrowFile(t *testing.T, n int, perGroup int64) []byte {
	t.Helper()
	rows := make([]narrowRow, n)
	for i := range rows {
		rows[i] = narrowRow{ID: int64(i), Name: fmt.Sprintf("n%d", i%7), Small: int8(i % 100), Gone: -1}
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[narrowRow](&buf, parquet.MaxRowsPerRowGroup(perGroup), parquet.Compression(&parquet.Snappy))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func optLeaf(name string, typ format.Type, lt format.LogicalTypeValue) format.SchemaElement {
	el := format.SchemaElement{Name: name, Type: thrift.New(typ), RepetitionType: thrift.New(format.Optional)}
	if lt != nil {
		el.LogicalType = format.LogicalType{Value: lt}
	}
	if _, ok := lt.(*format.StringType); ok {
		el.ConvertedType = thrift.New(deprecated.UTF8)
	}
	return el
}

// tableShape is the table's schema now: name first, then id, small widened to INT(32), an added
// struct column, a constant string partition column p and a null long partition column q.
func tableShape() *Shape {
	added := []format.SchemaElement{
		{Name: "added", RepetitionType: thrift.New(format.Optional), NumChildren: thrift.New(int32(2))},
		optLeaf("x", format.Int64, nil),
		optLeaf("y", format.ByteArray, &format.StringType{}),
	}
	return &Shape{Columns: []ShapeColumn{
		{Schema: []format.SchemaElement{optLeaf("name", format.ByteArray, &format.StringType{})}},
		{Schema: []format.SchemaElement{optLeaf("id", format.Int64, nil)}},
		{Schema: []format.SchemaElement{optLeaf("small", format.Int32, &format.IntType{BitWidth: 32, IsSigned: true})}},
		{Schema: added},
		{Schema: []format.SchemaElement{optLeaf("p", format.ByteArray, &format.StringType{})}, Const: &Constant{Plain: []byte("eu west")}},
		{Schema: []format.SchemaElement{optLeaf("q", format.Int64, nil)}, Const: &Constant{Null: true}},
	}}
}

func shaped(t *testing.T, src []byte, del *roaring64.Bitmap, s *Shape) []byte {
	t.Helper()
	p, err := NewShapedPlan(bytes.NewReader(src), int64(len(src)), del, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Reshaped() {
		t.Fatal("plan is not reshaped")
	}
	var out bytes.Buffer
	n, err := p.WriteTo(&out)
	if err != nil {
		t.Fatal(err)
	}
	if size, ok := p.Size(); ok && size != n {
		t.Fatalf("planned %d bytes, wrote %d", size, n)
	}
	var patch bytes.Buffer
	l, err := p.WriteLayout(&patch)
	if err != nil {
		t.Fatal(err)
	}
	viaLayout := make([]byte, l.Size())
	if _, err := l.ReadAt(viaLayout, 0, bytes.NewReader(src), bytes.NewReader(patch.Bytes())); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(viaLayout, out.Bytes()) {
		t.Fatal("layout and WriteTo give different bytes")
	}
	return out.Bytes()
}

func TestShapeServesTableSchema(t *testing.T) {
	src := narrowFile(t, 3000, 700)
	del := roaring64.BitmapOf(5, 6, 1400, 2999)
	for _, c := range []struct {
		name string
		del  *roaring64.Bitmap
	}{{"footer-only", nil}, {"deleted-rows", del}} {
		t.Run(c.name, func(t *testing.T) {
			out := shaped(t, src, c.del, tableShape())
			path := filepath.Join(t.TempDir(), "f.parquet")
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			got := duckColumns(t, path)
			want := []string{"name VARCHAR", "id BIGINT", "small INTEGER", "added STRUCT(x BIGINT, y VARCHAR)", "p VARCHAR", "q BIGINT"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("DuckDB sees columns %q, want %q", got, want)
			}
			live := int64(3000)
			var sumID, sumSmall int64
			for i := range int64(3000) {
				if c.del != nil && c.del.Contains(uint64(i)) {
					live--
					continue
				}
				sumID, sumSmall = sumID+i, sumSmall+i%100
			}
			r := duckQuery(t, "SELECT count(*)::VARCHAR c, sum(id)::VARCHAR s, sum(small)::VARCHAR sm, count(added)::VARCHAR a, "+
				"count(*) FILTER (WHERE p = 'eu west')::VARCHAR p, count(q)::VARCHAR q, count(DISTINCT name)::VARCHAR n FROM read_parquet('"+path+"')")[0]
			wantR := map[string]string{"c": itoa(live), "s": itoa(sumID), "sm": itoa(sumSmall), "a": "0", "p": itoa(live), "q": "0", "n": "7"}
			for k, v := range wantR {
				if r[k] != v {
					t.Errorf("DuckDB %s = %v, want %v", k, r[k], v)
				}
			}
			f, rows := readRows(t, out)
			if f.NumRows() != live || int64(len(rows)) != live {
				t.Errorf("parquet-go reads %d rows (footer %d), want %d", len(rows), f.NumRows(), live)
			}
		})
	}
}

func TestShapeIdentityAndRefusals(t *testing.T) {
	src := narrowFile(t, 100, 50)
	same := &Shape{Columns: []ShapeColumn{
		{Schema: []format.SchemaElement{optLeaf("id", format.Int64, nil)}},
		{Schema: []format.SchemaElement{optLeaf("name", format.ByteArray, &format.StringType{})}},
		{Schema: []format.SchemaElement{optLeaf("small", format.Int32, &format.IntType{BitWidth: 8, IsSigned: true})}},
		{Schema: []format.SchemaElement{optLeaf("gone", format.Int64, nil)}},
	}}
	p, err := NewShapedPlan(bytes.NewReader(src), int64(len(src)), nil, nil, same)
	if err != nil {
		t.Fatal(err)
	}
	if p.Reshaped() {
		t.Error("a shape equal to the file's columns reshapes it")
	}
	// A column stored in another physical type is served as stored (readers convert it), with the
	// shape's column order.
	otherType := &Shape{Columns: []ShapeColumn{
		{Schema: []format.SchemaElement{optLeaf("name", format.ByteArray, &format.StringType{})}},
		{Schema: []format.SchemaElement{optLeaf("id", format.Double, nil)}},
	}}
	out := shaped(t, src, nil, otherType)
	f := footerOf(t, out)
	if got := f.meta.Schema[2]; got.Name != "id" || got.Type.V != format.Int64 {
		t.Errorf("id is served as %s %v, want INT64 as stored", got.Name, got.Type.V)
	}
	if len(f.meta.Schema) != 3 {
		t.Errorf("served schema has %d elements, want root, name, id", len(f.meta.Schema))
	}
	_, bad := NewShapedPlan(bytes.NewReader(src), int64(len(src)), nil, nil, &Shape{Columns: []ShapeColumn{{}}})
	if !errors.Is(bad, ErrInvalidArgument) {
		t.Errorf("a shape column without a name: err = %v, want ErrInvalidArgument", bad)
	}
	// A column whose type has no Parquet form is served as stored when the file has it, and
	// makes the file unservable when it does not.
	p, err = NewShapedPlan(bytes.NewReader(src), int64(len(src)), nil, nil, &Shape{Columns: append(slices.Clone(same.Columns[:3]), ShapeColumn{Name: "gone"})})
	if err != nil || p.Reshaped() {
		t.Errorf("a formless column the file has: reshaped %v, err %v; want served as stored", p != nil && p.Reshaped(), err)
	}
	_, bad = NewShapedPlan(bytes.NewReader(src), int64(len(src)), nil, nil, &Shape{Columns: []ShapeColumn{{Name: "v"}}})
	if !errors.Is(bad, ErrUnsupported) {
		t.Errorf("a formless column the file lacks: err = %v, want ErrUnsupported", bad)
	}
}

// oldRow is a file written before the table widened its types (Delta "Type Widening").
type oldRow struct {
	N    int32   `parquet:"n"`
	F    float32 `parquet:"f,optional"`
	D    int32   `parquet:"d,date"`
	Dec  int32   `parquet:"dec,decimal(2:5)"`
	Tags []int32 `parquet:"tags,list"`
}

func TestShapeConvertsWidenedTypes(t *testing.T) {
	rows := make([]oldRow, 1000)
	for i := range rows {
		rows[i] = oldRow{N: int32(i), F: float32(i) / 4, D: int32(19000 + i%10), Dec: int32(i * 100), Tags: []int32{int32(i), -int32(i)}}
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[oldRow](&buf, parquet.MaxRowsPerRowGroup(300))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src := buf.Bytes()
	dec := optLeaf("dec", format.Int64, &format.DecimalType{Precision: 12, Scale: 4})
	dec.ConvertedType, dec.Precision, dec.Scale = thrift.New(deprecated.Decimal), thrift.New(int32(12)), thrift.New(int32(4))
	shape := &Shape{Columns: []ShapeColumn{
		{Schema: []format.SchemaElement{optLeaf("n", format.Int64, nil)}},
		{Schema: []format.SchemaElement{optLeaf("f", format.Double, nil)}},
		{Schema: []format.SchemaElement{optLeaf("d", format.Int64, &format.TimestampType{Unit: format.TimeUnit{Value: &format.MicroSeconds{}}})}},
		{Schema: []format.SchemaElement{dec}},
		{Schema: []format.SchemaElement{
			{Name: "tags", RepetitionType: thrift.New(format.Optional), NumChildren: thrift.New(int32(1)), ConvertedType: thrift.New(deprecated.List)},
			{Name: "list", RepetitionType: thrift.New(format.Repeated), NumChildren: thrift.New(int32(1))},
			optLeaf("element", format.Int64, nil),
		}},
	}}
	del := roaring64.BitmapOf(0, 1, 299, 300, 999)
	for _, c := range []struct {
		name string
		del  *roaring64.Bitmap
	}{{"footer-only", nil}, {"deleted-rows", del}} {
		t.Run(c.name, func(t *testing.T) {
			out := shaped(t, src, c.del, shape)
			path := filepath.Join(t.TempDir(), "f.parquet")
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			got := duckColumns(t, path)
			want := []string{"n BIGINT", "f DOUBLE", "d TIMESTAMP", "dec DECIMAL(12,4)", "tags BIGINT[]"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("DuckDB sees columns %q, want %q", got, want)
			}
			var live, sumN, sumTag int64
			var sumF float64
			days := map[int64]bool{}
			for i := range int64(1000) {
				if c.del != nil && c.del.Contains(uint64(i)) {
					continue
				}
				live, sumN, sumF, sumTag = live+1, sumN+i, sumF+float64(i)/4, sumTag+i
				days[19000+i%10] = true
			}
			r := duckQuery(t, "SELECT count(*)::VARCHAR c, sum(n)::VARCHAR n, (sum(f) * 4)::BIGINT::VARCHAR f, sum(dec)::VARCHAR dsum, "+
				"sum(list_sum(list_transform(tags, x -> abs(x))))::VARCHAR tags, count(DISTINCT d)::VARCHAR d, "+
				"min(d)::VARCHAR mind FROM read_parquet('"+path+"')")[0]
			wantR := map[string]string{"c": itoa(live), "n": itoa(sumN), "f": itoa(int64(sumF * 4)), "dsum": itoa(sumN) + ".0000",
				"tags": itoa(2 * sumTag), "d": itoa(int64(len(days))), "mind": "2022-01-08 00:00:00"}
			for k, v := range wantR {
				if r[k] != v {
					t.Errorf("DuckDB %s = %v, want %v", k, r[k], v)
				}
			}
		})
	}
}

// BenchmarkShapeNeeded is the per-file cost of deciding, at a file's first stat, whether it is
// served as stored: the footer of a small Spark-like file against its table's shape, decoded,
// and found in a memo of schemas decided before (every file of a listing but the first).
func BenchmarkShapeNeeded(b *testing.B) {
	t := &testing.T{}
	src := narrowFile(t, 3, 3)
	s := &Shape{Columns: []ShapeColumn{
		{Schema: []format.SchemaElement{optLeaf("id", format.Int64, nil)}},
		{Schema: []format.SchemaElement{optLeaf("name", format.ByteArray, &format.StringType{})}},
		{Schema: []format.SchemaElement{optLeaf("small", format.Int32, &format.IntType{BitWidth: 8, IsSigned: true})}},
		{Schema: []format.SchemaElement{optLeaf("gone", format.Int64, nil)}},
	}}
	r := bytes.NewReader(src)
	for _, c := range []struct {
		name string
		memo *ShapeMemo
	}{{"decoded", nil}, {"memo", NewShapeMemo(1 << 20)}} {
		s.Key = "bench"
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if rw, err := ShapeNeeded(r, int64(len(src)), s, c.memo); err != nil || rw {
					b.Fatal(rw, err)
				}
			}
		})
	}
}

// duckColumns returns "name TYPE" of each column DuckDB sees in the Parquet file at path.
func duckColumns(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, r := range duckQuery(t, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet('"+path+"'))") {
		out = append(out, fmt.Sprint(r["column_name"], " ", r["column_type"]))
	}
	return out
}

// A memo decides a schema it has seen without decoding it, and only that schema: files with
// the same encoded schema get the verdict of the first, others are decided afresh, and a
// shape key keeps verdicts of different shapes apart.
func TestShapeMemo(t *testing.T) {
	narrow := narrowFile(t, 30, 10)
	other := narrowFile(t, 500, 100) // other row groups, the same schema
	exact := &Shape{Key: "exact", Columns: []ShapeColumn{
		{Schema: []format.SchemaElement{{Name: "id", Type: thrift.New(format.Int64), RepetitionType: thrift.New(format.Required)}}},
		{Schema: []format.SchemaElement{optLeaf("name", format.ByteArray, &format.StringType{})}},
		{Schema: []format.SchemaElement{{Name: "small", Type: thrift.New(format.Int32), RepetitionType: thrift.New(format.Required),
			LogicalType: format.LogicalType{Value: &format.IntType{BitWidth: 8, IsSigned: true}}, ConvertedType: thrift.New(deprecated.Int8)}}},
		{Schema: []format.SchemaElement{{Name: "gone", Type: thrift.New(format.Int64), RepetitionType: thrift.New(format.Required)}}},
	}}
	table := tableShape()
	table.Key = "table"
	memo := NewShapeMemo(1 << 20)
	check := func(src []byte, s *Shape, want bool) {
		t.Helper()
		plain, err := ShapeNeeded(bytes.NewReader(src), int64(len(src)), s, nil)
		if err != nil {
			t.Fatal(err)
		}
		memoed, err := ShapeNeeded(bytes.NewReader(src), int64(len(src)), s, memo)
		if err != nil {
			t.Fatal(err)
		}
		if plain != want || memoed != want {
			t.Errorf("shape %s: reshape %v without the memo, %v with it; want %v", s.Key, plain, memoed, want)
		}
	}
	check(narrow, exact, false)
	check(narrow, table, true)
	check(other, exact, false)
	check(other, table, true)
	if n := len(memo.m); n != 2 {
		t.Errorf("memo holds %d verdicts, want 2 (one schema, two shapes)", n)
	}
	// A memo whose budget one key exceeds keeps nothing and still decides.
	tiny := NewShapeMemo(8)
	if rw, err := ShapeNeeded(bytes.NewReader(narrow), int64(len(narrow)), table, tiny); err != nil || !rw || len(tiny.m) != 0 {
		t.Errorf("tiny memo: reshape %v, %v, %d kept", rw, err, len(tiny.m))
	}
}

// schemaBytes finds the schema wherever a writer put it among the footer's fields, and a footer
// without one is corrupt.
func TestSchemaBytes(t *testing.T) {
	src := narrowFile(t, 30, 10)
	f, err := readFooter(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := schemaBytes(f.raw)
	if err != nil {
		t.Fatal(err)
	}
	// The same schema alone, as field 2 of an otherwise empty struct.
	only, err := thrift.Marshal(new(thrift.CompactProtocol), &footerSchema{Schema: f.meta.Schema})
	if err != nil {
		t.Fatal(err)
	}
	if want := only[1 : len(only)-1]; !bytes.Equal(raw, want) {
		t.Errorf("schema bytes differ from the schema encoded alone")
	}
	// Field 3 (num_rows, i64 0) before field 2 (a long-form header: id 2 after 3): the schema
	// is found after it.
	moved := append([]byte{0x36, 0x00, 0x09, 0x04}, append(slices.Clone(raw), 0x00)...)
	if got, err := schemaBytes(moved); err != nil || !bytes.Equal(got, raw) {
		t.Errorf("schema after num_rows: %v", err)
	}
	if _, err := schemaBytes([]byte{0x15, 0x02, 0x00}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("footer without a schema: %v, want ErrCorrupt", err)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r     io.ReaderAt
	bytes int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.bytes += int64(len(p))
	return c.r.ReadAt(p, off)
}

// wideFile is a file of one row whose schema alone is larger than tailGuess.
func wideFile(t *testing.T, columns int) []byte {
	t.Helper()
	g := parquet.Group{}
	row := map[string]any{}
	for i := range columns {
		name := fmt.Sprintf("a_rather_long_column_name_to_grow_the_schema_%05d", i)
		g[name] = parquet.Optional(parquet.Leaf(parquet.Int64Type))
		row[name] = int64(i)
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[map[string]any](&buf, parquet.NewSchema("wide", g))
	if _, err := w.Write([]map[string]any{row}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A footer larger than the tail read is read only as far as its schema: a file of 2,000 row
// groups (a footer of hundreds of KiB) costs two reads of 64 KiB, with the verdict a whole
// footer gives; a schema longer than 64 KiB is still read whole.
func TestShapeNeededReadsTheSchemaOnly(t *testing.T) {
	many := narrowFile(t, 20_000, 10)
	f, err := readFooter(bytes.NewReader(many), int64(len(many)))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.meta.RowGroups) != 2000 {
		t.Fatalf("%d row groups", len(f.meta.RowGroups))
	}
	footerLen := int64(binary.LittleEndian.Uint32(many[len(many)-8:]))
	if footerLen <= 2*tailGuess {
		t.Fatalf("footer of %d bytes: too small for this test", footerLen)
	}
	table := tableShape()
	for _, c := range []struct {
		shape *Shape
		want  bool
	}{{table, true}, {&Shape{Columns: []ShapeColumn{
		{Schema: []format.SchemaElement{{Name: "id", Type: thrift.New(format.Int64), RepetitionType: thrift.New(format.Required)}}},
		{Schema: []format.SchemaElement{optLeaf("name", format.ByteArray, &format.StringType{})}},
		{Schema: []format.SchemaElement{{Name: "small", Type: thrift.New(format.Int32), RepetitionType: thrift.New(format.Required),
			LogicalType: format.LogicalType{Value: &format.IntType{BitWidth: 8, IsSigned: true}}, ConvertedType: thrift.New(deprecated.Int8)}}},
		{Schema: []format.SchemaElement{{Name: "gone", Type: thrift.New(format.Int64), RepetitionType: thrift.New(format.Required)}}},
	}}, false}} {
		r := &countingReader{r: bytes.NewReader(many)}
		rw, err := ShapeNeeded(r, int64(len(many)), c.shape, nil)
		if err != nil || rw != c.want {
			t.Errorf("reshape %v, %v; want %v", rw, err, c.want)
		}
		if r.bytes > 2*tailGuess {
			t.Errorf("read %d bytes of a footer of %d for its schema", r.bytes, footerLen)
		}
	}

	wide := wideFile(t, 2000)
	raw, err := schemaBytes(wide[len(wide)-8-int(binary.LittleEndian.Uint32(wide[len(wide)-8:])) : len(wide)-8])
	if err != nil || len(raw) <= tailGuess {
		t.Fatalf("schema of %d bytes (%v): want more than %d", len(raw), err, tailGuess)
	}
	r := &countingReader{r: bytes.NewReader(wide)}
	if rw, err := ShapeNeeded(r, int64(len(wide)), table, nil); err != nil || !rw {
		t.Errorf("wide file: reshape %v, %v; want true", rw, err)
	}
}
