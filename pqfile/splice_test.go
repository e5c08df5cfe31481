package pqfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// genFileKV is genFile with Arrow's schema among the key values, as pyarrow writes it.
func genFileKV(t *testing.T, rows []genRow, rowsPerGroup int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[genRow](&buf, parquet.MaxRowsPerRowGroup(rowsPerGroup), parquet.PageBufferSize(2048),
		parquet.KeyValueMetadata(arrowSchemaKey, "/////schema"), parquet.KeyValueMetadata("origin", "pqfile-test"),
		parquet.KeyValueMetadata(sparkSchemaKey, `{"type":"struct"}`))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// genColumns are genRow's top-level columns, served as stored.
var genColumns = []string{"id", "name", "opt", "tags", "inner", "items", "m", "f", "ts", "blob"}

// shapeKeys numbers the shapes of withConsts.
var shapeKeys atomic.Int64

// withConsts returns a shape of genRow's columns with constants inserted before the columns
// at the given positions (len(genColumns): at the end).
func withConsts(at map[int][]ShapeColumn) *Shape {
	s := &Shape{Key: fmt.Sprint("withConsts ", shapeKeys.Add(1))} // a Key names one shape (see ShapeMemo)
	for i := 0; i <= len(genColumns); i++ {
		s.Columns = append(s.Columns, at[i]...)
		if i < len(genColumns) {
			s.Columns = append(s.Columns, ShapeColumn{Name: genColumns[i]})
		}
	}
	return s
}

func constCol(name string, typ format.Type, lt format.LogicalTypeValue, k *Constant) ShapeColumn {
	return ShapeColumn{Schema: []format.SchemaElement{optLeaf(name, typ, lt)}, Const: k}
}

// TestSpliceMatchesDecodedPath serves files whose only change is constant columns both ways:
// by splicing the footer and through parquet-go's decoded footer. Both give the same schema,
// rows, chunks, row group totals, column orders and key values (without the embedded schemas),
// and no page index references; DuckDB reads the spliced file's constants.
func TestSpliceMatchesDecodedPath(t *testing.T) {
	rows := genRows(900)
	p := constCol("p", format.ByteArray, &format.StringType{}, &Constant{Plain: []byte("eu west")})
	q := constCol("q", format.Int64, nil, &Constant{Null: true})
	r := constCol("r", format.Boolean, nil, &Constant{Plain: []byte{1}})
	n := constCol("n", format.Int32, &format.IntType{BitWidth: 32, IsSigned: true}, &Constant{Plain: []byte{42, 0, 0, 0}})
	shapes := map[string]*Shape{
		"first":  withConsts(map[int][]ShapeColumn{0: {p}}),
		"middle": withConsts(map[int][]ShapeColumn{3: {q, r}}),
		"last":   withConsts(map[int][]ShapeColumn{len(genColumns): {n}}),
		"spread": withConsts(map[int][]ShapeColumn{0: {r}, 5: {p}, len(genColumns): {q, n}}),
	}
	files := map[string][]byte{
		"one group":        genFile(t, rows, 1000, &parquet.Snappy),
		"seven groups":     genFile(t, rows, 130, &parquet.Zstd),
		"arrow key values": genFileKV(t, rows, 450),
	}
	for fname, src := range files {
		for sname, shape := range shapes {
			t.Run(fname+"/"+sname, func(t *testing.T) {
				plan, err := NewShapedPlan(bytes.NewReader(src), int64(len(src)), nil, nil, shape)
				if err != nil {
					t.Fatal(err)
				}
				if plan.spliced == nil {
					t.Fatal("the plan is not spliced")
				}
				got := shaped(t, src, nil, shape)
				noSplice.Store(true)
				want := shaped(t, src, nil, shape)
				noSplice.Store(false)
				compareServed(t, got, want)
				if n, ok := SplicedSize(bytes.NewReader(src), int64(len(src)), shape); !ok || n != int64(len(got)) {
					t.Errorf("SplicedSize = %d, %v; the served file has %d bytes", n, ok, len(got))
				}
				if sname == "spread" && fname == "seven groups" {
					path := filepath.Join(t.TempDir(), "spliced.parquet")
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					res := duckQuery(t, "select count(*)::VARCHAR c, count(q)::VARCHAR q, min(p) p, max(p) px, sum(n)::VARCHAR n, "+
						"bool_and(r)::VARCHAR r, sum(id)::VARCHAR s from read_parquet('"+path+"')")
					wantRes := map[string]any{"c": "900", "q": "0", "p": "eu west", "px": "eu west", "n": "37800", "r": "true", "s": "404550"}
					if !reflect.DeepEqual(res[0], wantRes) {
						t.Errorf("duckdb = %v, want %v", res[0], wantRes)
					}
				}
			})
		}
	}
}

// compareServed checks that the spliced output got serves what the decoded path's want does.
func compareServed(t *testing.T, got, want []byte) {
	t.Helper()
	gf, wf := footerOf(t, got), footerOf(t, want)
	g, w := &gf.meta, &wf.meta
	if !reflect.DeepEqual(g.Schema, w.Schema) {
		t.Errorf("schema\n got %+v\nwant %+v", g.Schema, w.Schema)
	}
	if g.NumRows != w.NumRows || len(g.RowGroups) != len(w.RowGroups) {
		t.Fatalf("%d rows in %d groups, want %d in %d", g.NumRows, len(g.RowGroups), w.NumRows, len(w.RowGroups))
	}
	for i := range g.RowGroups {
		gr, wr := g.RowGroups[i], w.RowGroups[i]
		if gr.NumRows != wr.NumRows || gr.TotalByteSize != wr.TotalByteSize || len(gr.Columns) != len(wr.Columns) {
			t.Fatalf("row group %d: %d rows, %d bytes, %d columns; want %d, %d, %d", i,
				gr.NumRows, gr.TotalByteSize, len(gr.Columns), wr.NumRows, wr.TotalByteSize, len(wr.Columns))
		}
		for j := range gr.Columns {
			gc, wc := gr.Columns[j], wr.Columns[j]
			gc.MetaData.Statistics, wc.MetaData.Statistics = format.Statistics{}, format.Statistics{}
			if !reflect.DeepEqual(gc, wc) {
				t.Errorf("row group %d chunk %d\n got %+v\nwant %+v", i, j, gc, wc)
			}
			if gc.OffsetIndexOffset != 0 || gc.ColumnIndexOffset != 0 {
				t.Errorf("row group %d chunk %d keeps a page index reference", i, j)
			}
		}
	}
	if !reflect.DeepEqual(g.ColumnOrders, w.ColumnOrders) {
		t.Errorf("column orders\n got %+v\nwant %+v", g.ColumnOrders, w.ColumnOrders)
	}
	if !reflect.DeepEqual(g.KeyValueMetadata, w.KeyValueMetadata) {
		t.Errorf("key values\n got %+v\nwant %+v", g.KeyValueMetadata, w.KeyValueMetadata)
	}
	for _, kv := range g.KeyValueMetadata {
		if kv.Key == arrowSchemaKey || kv.Key == sparkSchemaKey {
			t.Errorf("key value %q kept", kv.Key)
		}
	}
	_, gotRows := readRows(t, got)
	_, wantRows := readRows(t, want)
	if len(gotRows) != len(wantRows) {
		t.Fatalf("%d rows, want %d", len(gotRows), len(wantRows))
	}
	for i := range gotRows {
		if !gotRows[i].Equal(wantRows[i]) {
			t.Fatalf("row %d: %v, want %v", i, gotRows[i], wantRows[i])
		}
	}
}

// TestSpliceTakesOnlyConstants leaves to the decoded path every file whose change is more than
// constants: a column missing or widened, columns in another order, rows deleted, a footer
// over the first read.
func TestSpliceTakesOnlyConstants(t *testing.T) {
	src := genFile(t, genRows(300), 100, &parquet.Snappy)
	p := constCol("p", format.ByteArray, &format.StringType{}, &Constant{Plain: []byte("x")})
	missing := withConsts(map[int][]ShapeColumn{0: {p}})
	missing.Columns = append(missing.Columns, ShapeColumn{Schema: []format.SchemaElement{optLeaf("later", format.Int64, nil)}})
	swapped := withConsts(map[int][]ShapeColumn{0: {p}})
	swapped.Columns[1], swapped.Columns[2] = swapped.Columns[2], swapped.Columns[1]
	noConst := withConsts(nil)
	for name, s := range map[string]*Shape{"a missing column": missing, "columns swapped": swapped, "no constant": noConst} {
		if plan := newSplicedPlan(bytes.NewReader(src), int64(len(src)), s, nil); plan != nil {
			t.Errorf("%s: spliced", name)
		}
		if n, ok := SplicedSize(bytes.NewReader(src), int64(len(src)), s); ok {
			t.Errorf("%s: SplicedSize gives %d bytes", name, n)
		}
	}
	// A Key given to two shapes (a caller's mistake: the memo then answers for the wrong one)
	// leaves the file to the decoded path, never a panic or a wrong footer.
	memo := NewShapeMemo(1 << 20)
	fits := withConsts(map[int][]ShapeColumn{0: {p}})
	if newSplicedPlan(bytes.NewReader(src), int64(len(src)), fits, memo) == nil {
		t.Fatal("the fitting shape: not spliced")
	}
	missing.Key = fits.Key
	if plan := newSplicedPlan(bytes.NewReader(src), int64(len(src)), missing, memo); plan != nil {
		t.Error("a shape with another's Key and a column more: spliced")
	}
	// A footer larger than the first read.
	big := genFile(t, genRows(3000), 1, &parquet.Uncompressed)
	if n := footerOf(t, big).start; int64(len(big))-n <= tailGuess {
		t.Fatalf("footer of %d bytes fits the first read", int64(len(big))-n)
	}
	if plan := newSplicedPlan(bytes.NewReader(big), int64(len(big)), withConsts(map[int][]ShapeColumn{0: {p}}), nil); plan != nil {
		t.Error("a footer over the first read: spliced")
	}
}

// FuzzSplice feeds damaged footers to the splice: it never panics, and what it lays out is a
// footer parquet-go decodes, with the source's rows.
func FuzzSplice(f *testing.F) {
	rows := genRows(40)
	f.Add(genFile(f, rows, 10, &parquet.Snappy), 0, byte(0))
	f.Add(genFile(f, rows, 40, &parquet.Uncompressed), 17, byte(0xff))
	p := constCol("p", format.ByteArray, &format.StringType{}, &Constant{Plain: []byte("x")})
	shape := withConsts(map[int][]ShapeColumn{2: {p}})
	f.Fuzz(func(t *testing.T, src []byte, at int, b byte) {
		if len(src) < 12 {
			return
		}
		// Damage one byte of the footer.
		src = bytes.Clone(src)
		src[len(src)-9-(at&0xffff)%(len(src)-8)] ^= b
		plan := newSplicedPlan(bytes.NewReader(src), int64(len(src)), shape, nil)
		if plan == nil {
			return
		}
		var out bytes.Buffer
		if _, err := plan.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		if _, err := parquet.OpenFile(bytes.NewReader(out.Bytes()), int64(out.Len()), parquet.SkipPageIndex(true)); err != nil {
			if _, serr := parquet.OpenFile(bytes.NewReader(src), int64(len(src)), parquet.SkipPageIndex(true)); serr == nil {
				t.Fatalf("the source opens, the spliced output does not: %v", err)
			}
		}
	})
}

// BenchmarkSplicedPlan lays out a small one-row-group file with a constant column, by splicing
// and through the decoded footer.
func BenchmarkSplicedPlan(b *testing.B) {
	src := genFile(b, genRows(100), 100, &parquet.Snappy)
	shape := withConsts(map[int][]ShapeColumn{len(genColumns): {constCol("p", format.ByteArray, &format.StringType{}, &Constant{Plain: []byte("eu")})}})
	for _, decoded := range []bool{false, true} {
		b.Run(map[bool]string{false: "spliced", true: "decoded"}[decoded], func(b *testing.B) {
			noSplice.Store(decoded)
			defer noSplice.Store(false)
			b.ReportAllocs()
			for b.Loop() {
				p, err := NewShapedPlan(bytes.NewReader(src), int64(len(src)), nil, nil, shape)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := p.Size(); !ok {
					b.Fatal("no size")
				}
			}
		})
	}
}

// BenchmarkSplicedSize sizes the footer of a three-row, two-column file (as each of a
// partitioned table's many small files) with a partition column, as a listing's stat does.
func BenchmarkSplicedSize(b *testing.B) {
	type row struct {
		ID    int64   `parquet:"id"`
		Value *string `parquet:"value,optional"`
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf)
	v := "a"
	if _, err := w.Write([]row{{1, &v}, {2, nil}, {3, &v}}); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	src := buf.Bytes()
	shape := &Shape{Key: "BenchmarkSplicedSize", Columns: []ShapeColumn{{Name: "id"}, {Name: "value"},
		constCol("region", format.ByteArray, &format.StringType{}, &Constant{Plain: []byte("eu")})}}
	b.Run("size", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := SplicedSize(bytes.NewReader(src), int64(len(src)), shape); !ok {
				b.Fatal("not spliced")
			}
		}
	})
	// What a stat paid before SplicedSize: the plan, laid out.
	b.Run("plan+layout", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := NewShapedPlan(bytes.NewReader(src), int64(len(src)), nil, nil, shape)
			if err != nil {
				b.Fatal(err)
			}
			var patch bytes.Buffer
			if _, err := p.WriteLayout(&patch); err != nil {
				b.Fatal(err)
			}
		}
	})
}
