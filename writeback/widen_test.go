package writeback

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/delta"
)

func TestWidensFollowsTheProtocol(t *testing.T) {
	p := func(n string) delta.DataType { return delta.PrimitiveType{Name: n} }
	dec := func(pr, s int) delta.DataType { return delta.DecimalType{Precision: pr, Scale: s} }
	for _, c := range []struct {
		from, to delta.DataType
		ok       bool
	}{
		{p("byte"), p("short"), true}, {p("byte"), p("long"), true}, {p("short"), p("integer"), true},
		{p("integer"), p("long"), true}, {p("long"), p("integer"), false}, {p("integer"), p("integer"), false},
		{p("float"), p("double"), true}, {p("double"), p("float"), false},
		{p("integer"), p("double"), true}, {p("long"), p("double"), false},
		{p("date"), p("timestamp_ntz"), true}, {p("date"), p("timestamp"), false},
		{dec(6, 2), dec(10, 4), true}, {dec(6, 2), dec(7, 3), true}, {dec(6, 2), dec(7, 2), true},
		{dec(6, 2), dec(8, 5), false}, {dec(6, 2), dec(6, 3), false}, {dec(10, 4), dec(6, 2), false},
		{p("integer"), dec(10, 0), true}, {p("integer"), dec(12, 2), true}, {p("integer"), dec(11, 2), false},
		{p("integer"), dec(9, 0), false}, {p("long"), dec(20, 0), true}, {p("long"), dec(19, 0), false},
		{p("float"), p("long"), false}, {p("string"), p("binary"), false},
	} {
		if got := widens(c.from, c.to); got != c.ok {
			t.Errorf("widens(%s, %s) = %v, want %v", c.from, c.to, got, c.ok)
		}
	}
}

type narrowRow struct {
	L   *int32   `parquet:"l,optional"`
	D   *float32 `parquet:"d,optional"`
	Dec *int32   `parquet:"dec,optional,decimal(2:6)"`
	TS  *int32   `parquet:"ts,optional,date"`
	I   *int8    `parquet:"i,optional"`
	S   string   `parquet:"s"`
}

// Columns written narrower than the table's types (the way pandas or an
// older job writes them) are re-encoded while staged: the committed file
// holds the table's physical types, the values are the same, and the
// statistics come from the re-encoded file.
func TestAppendWidensColumns(t *testing.T) {
	dir := testTable{schema: structSchema(
		field("l", `"long"`, true, ""), field("d", `"double"`, true, ""),
		field("dec", `"decimal(12,4)"`, true, ""), field("ts", `"timestamp_ntz"`, true, ""),
		field("i", `"integer"`, true, ""), field("s", `"string"`, false, "")),
		protocol: readerWriter7("timestampNtz")}.create(t)
	src := writeParquet(t, "narrow.parquet", []narrowRow{
		{L: ptr[int32](-7), D: ptr[float32](1.5), Dec: ptr[int32](-12345), TS: ptr[int32](1), I: ptr[int8](-3), S: "a"},
		{L: ptr[int32](2_000_000_000), D: ptr[float32](0.25), Dec: ptr[int32](999), TS: ptr[int32](19000), I: ptr[int8](100), S: "b"},
		{S: "c"},
	})
	before, _ := os.ReadFile(src)
	tmp := t.TempDir()
	c := New(openTable(t, dir), Options{EngineInfo: "deltafs/test", TempDir: tmp})
	res, err := c.Append(context.Background(), []File{{LocalPath: src, Name: "narrow.parquet"}})
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if after, _ := os.ReadFile(src); string(after) != string(before) {
		t.Error("the caller's file was modified")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("re-encoded copies left in TempDir: %v", left)
	}
	key := res.Added[0]
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(key)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"l": "INT64", "d": "DOUBLE", "dec": "INT64", "ts": "INT64", "i": "INT32", "s": "BYTE_ARRAY"}
	for _, el := range pf.Metadata().Schema[1:] {
		if got := el.Type.V.String(); got != want[el.Name] {
			t.Errorf("column %s stored as %s, want %s", el.Name, got, want[el.Name])
		}
		if el.Name == "dec" {
			if dt, ok := el.LogicalType.Value.(*format.DecimalType); !ok || dt.Precision != 12 || dt.Scale != 4 {
				t.Errorf("dec annotated %v, want DECIMAL(12,4)", el.LogicalType)
			}
		}
		if el.Name == "ts" {
			if ts, ok := el.LogicalType.Value.(*format.TimestampType); !ok || ts.IsAdjustedToUTC {
				t.Errorf("ts annotated %v, want TIMESTAMP(MICROS, not UTC-adjusted)", el.LogicalType)
			}
		}
	}
	rows, _ := readRows(t, filepath.Join(dir, filepath.FromSlash(key)))
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	r := rows[1]
	if r[0].Int64() != 2_000_000_000 || r[1].Double() != 0.25 || r[2].Int64() != 99900 ||
		r[3].Int64() != 19000*86_400_000_000 || r[4].Int32() != 100 {
		t.Errorf("row 2 re-encoded as %v", r)
	}
	if got := rows[0][2].Int64(); got != -1234500 { // -123.45 at scale 4
		t.Errorf("dec of row 1: unscaled %d, want -1234500", got)
	}
	if !rows[2][0].IsNull() || !rows[2][2].IsNull() {
		t.Errorf("row 3 lost its nulls: %v", rows[2])
	}
	var stats struct {
		MinValues map[string]json.RawMessage `json:"minValues"`
		MaxValues map[string]json.RawMessage `json:"maxValues"`
	}
	add := addFor(t, latest(t, dir), key)
	if err := json.Unmarshal([]byte(add.Stats), &stats); err != nil {
		t.Fatal(err)
	}
	for col, w := range map[string]string{"l": "-7", "dec": "-123.4500", "ts": `"1970-01-02T00:00:00.000"`, "d": "0.25"} {
		if got := string(stats.MinValues[col]); got != w {
			t.Errorf("minValues.%s = %s, want %s (stats: %s)", col, got, w, add.Stats)
		}
	}
	if got := string(stats.MaxValues["l"]); got != "2000000000" {
		t.Errorf("maxValues.l = %s, want 2000000000", got)
	}
}

type wideRow struct {
	I *int64 `parquet:"i,optional"`
	S string `parquet:"s"`
}

// A file column wider than the table's is refused as a narrowing, and
// nothing is committed.
func TestAppendRefusesNarrowing(t *testing.T) {
	dir := testTable{schema: structSchema(field("i", `"integer"`, true, ""), field("s", `"string"`, false, ""))}.create(t)
	src := writeParquet(t, "wide.parquet", []wideRow{{I: ptr[int64](1 << 40), S: "x"}})
	_, err := newCommitter(t, dir).Append(context.Background(), []File{{LocalPath: src, Name: "wide.parquet"}})
	want := "wide.parquet: column i has the wrong type: the table wants integer, the file has optional INT64 (INT(64,true)), a long: narrowing long to integer could lose values"
	if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), want) {
		t.Fatalf("append: %v\nwant ErrInvalidFile with %q", err, want)
	}
	if v := latest(t, dir).Version(); v != 0 {
		t.Errorf("table at version %d after a refusal, want 0", v)
	}
}

// Decimals wider than 18 digits are written as FIXED_LEN_BYTE_ARRAY in
// two's complement of the fewest bytes, as Spark writes them.
func TestWidenDecimalToFixedLen(t *testing.T) {
	w := widening{from: delta.DecimalType{Precision: 6, Scale: 2}, to: delta.DecimalType{Precision: 25, Scale: 3}}
	for _, c := range []struct {
		in   int32
		want string // unscaled, decimal
	}{{-12345, "-123450"}, {999999, "9999990"}, {0, "0"}} {
		v, err := widenValue(parquet.Int32Value(c.in).Level(0, 1, 0), w)
		if err != nil {
			t.Fatal(err)
		}
		if v.Kind() != parquet.FixedLenByteArray || len(v.ByteArray()) != decimalBytes(25) || decimalBytes(25) != 11 {
			t.Fatalf("%d: %v (%d bytes), want an 11-byte FIXED_LEN_BYTE_ARRAY", c.in, v.Kind(), len(v.ByteArray()))
		}
		u, err := unscaled(v, w.to)
		if err != nil || u.String() != c.want {
			t.Errorf("%d: unscaled %v, %v; want %s", c.in, u, err, c.want)
		}
		if v.DefinitionLevel() != 1 {
			t.Errorf("%d: definition level %d, want 1 (kept)", c.in, v.DefinitionLevel())
		}
	}
}

type structNarrowRow struct {
	ID int64 `parquet:"id"`
	St *struct {
		A *int32  `parquet:"a,optional"`
		B *string `parquet:"b,optional"`
	} `parquet:"st,optional"`
	Z *float32 `parquet:"z,optional"`
}

// A field of a struct widens too; the columns keep their order (a
// rebuilt group must not sort its fields) and the other leaves their
// values.
func TestAppendWidensStructField(t *testing.T) {
	st := `{"type":"struct","fields":[` + field("a", `"long"`, true, "") + "," + field("b", `"string"`, true, "") + `]}`
	dir := testTable{schema: structSchema(field("id", `"long"`, false, ""), field("st", st, true, ""), field("z", `"double"`, true, ""))}.create(t)
	type inner = struct {
		A *int32  `parquet:"a,optional"`
		B *string `parquet:"b,optional"`
	}
	src := writeParquet(t, "st.parquet", []structNarrowRow{
		{ID: 1, St: &inner{A: ptr[int32](-5), B: ptr("x")}, Z: ptr[float32](2.5)},
		{ID: 2},
	})
	res, err := newCommitter(t, dir).Append(context.Background(), []File{{LocalPath: src, Name: "st.parquet"}})
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	path := filepath.Join(dir, filepath.FromSlash(res.Added[0]))
	rows, names := readRows(t, path)
	if got := strings.Join(names, ","); got != "id,st/a,st/b,z" {
		t.Errorf("columns %s, want id,st/a,st/b,z", got)
	}
	f, _ := os.Open(path)
	defer f.Close()
	fi, _ := f.Stat()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	for _, el := range pf.Metadata().Schema {
		if (el.Name == "a" && el.Type.V != format.Int64) || (el.Name == "z" && el.Type.V != format.Double) {
			t.Errorf("%s stored as %s", el.Name, el.Type.V)
		}
	}
	r := rows[0]
	if r[0].Int64() != 1 || r[1].Int64() != -5 || string(r[2].ByteArray()) != "x" || r[3].Double() != 2.5 {
		t.Errorf("row 1 re-encoded as %v", r)
	}
	if !rows[1][1].IsNull() || rows[1][1].DefinitionLevel() != 0 {
		t.Errorf("row 2: st.a %v (definition level %d), want null with a null struct (level 0)", rows[1][1], rows[1][1].DefinitionLevel())
	}
}

type int32IDRow struct {
	ID *int32 `parquet:"id,optional"`
}

// Under column mapping the re-encoded copy gets the physical names like
// any other file: the stored column is col-5f0a, INT64, with stats under
// that name.
func TestAppendWidensUnderColumnMapping(t *testing.T) {
	dir := testTable{protocol: `{"minReaderVersion":2,"minWriterVersion":5}`,
		config: map[string]string{"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "1"},
		schema: structSchema(field("id", `"long"`, true, `{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-5f0a"}`))}.create(t)
	src := writeParquet(t, "ids.parquet", []int32IDRow{{ID: ptr[int32](41)}, {ID: ptr[int32](42)}})
	res, err := newCommitter(t, dir).Append(context.Background(), []File{{LocalPath: src, Name: "ids.parquet"}})
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	path := filepath.Join(dir, filepath.FromSlash(res.Added[0]))
	f, _ := os.Open(path)
	defer f.Close()
	fi, _ := f.Stat()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	el := pf.Metadata().Schema[1]
	if el.Name != "col-5f0a" || el.Type.V != format.Int64 || el.FieldID != 1 {
		t.Errorf("stored column %s %s field_id %d, want col-5f0a INT64 field_id 1", el.Name, el.Type.V, el.FieldID)
	}
	add := addFor(t, latest(t, dir), res.Added[0])
	if !strings.Contains(add.Stats, `"minValues":{"col-5f0a":41}`) || !strings.Contains(add.Stats, `"maxValues":{"col-5f0a":42}`) {
		t.Errorf("stats %s, want min 41 and max 42 under col-5f0a", add.Stats)
	}
}
