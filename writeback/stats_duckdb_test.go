package writeback

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/pqfile"
)

// typesRow has a column of every type the appender writes statistics for.
type typesRow struct {
	B   *int8     `parquet:"b,optional"`
	Sh  *int16    `parquet:"sh,optional"`
	I   *int32    `parquet:"i,optional"`
	L   *int64    `parquet:"l,optional"`
	D9  *int32    `parquet:"d9,optional,decimal(2:9)"`
	D18 *int64    `parquet:"d18,optional,decimal(4:18)"`
	D30 *[13]byte `parquet:"d30,optional,decimal(5:30)"`
	Dt  *int32    `parquet:"dt,optional,date"`
	Ts  *int64    `parquet:"ts,optional,timestamp(microsecond:utc)"`
	Tn  *int64    `parquet:"tn,optional,timestamp(microsecond:local)"`
	Tm  *int64    `parquet:"tm,optional,timestamp(millisecond:utc)"`
	S   *string   `parquet:"s,optional"`
	Bin []byte    `parquet:"bin,optional"`
	Bo  *bool     `parquet:"bo,optional"`
	F   *float32  `parquet:"f,optional"`
	X   *float64  `parquet:"x,optional"`
	St  *struct {
		A    *int64  `parquet:"a,optional"`
		Name *string `parquet:"name,optional"`
	} `parquet:"st,optional"`
	N *int64 `parquet:"n,optional"`
}

var typesSchema = structSchema(
	field("b", `"byte"`, true, ""), field("sh", `"short"`, true, ""), field("i", `"integer"`, true, ""),
	field("l", `"long"`, true, ""), field("d9", `"decimal(9,2)"`, true, ""), field("d18", `"decimal(18,4)"`, true, ""),
	field("d30", `"decimal(30,5)"`, true, ""),
	field("dt", `"date"`, true, ""), field("ts", `"timestamp"`, true, ""), field("tn", `"timestamp_ntz"`, true, ""),
	field("tm", `"timestamp"`, true, ""),
	field("s", `"string"`, true, ""), field("bin", `"binary"`, true, ""), field("bo", `"boolean"`, true, ""),
	field("f", `"float"`, true, ""), field("x", `"double"`, true, ""),
	field("st", structSchema(field("a", `"long"`, true, ""), field("name", `"string"`, true, "")), true, ""),
	field("n", `"long"`, true, ""),
)

// randomTypesRows draws n rows; special picks which float specials appear.
func randomTypesRows(r *rand.Rand, n int, special []float64) []typesRow {
	maybe := func() bool { return r.IntN(5) != 0 }
	str := func() string {
		runes := []rune("aZé€\U0001F600\u007f\U0010FFFF0")
		var b strings.Builder
		for range r.IntN(45) {
			b.WriteRune(runes[r.IntN(len(runes))])
		}
		return b.String()
	}
	rows := make([]typesRow, n)
	for k := range rows {
		row := &rows[k]
		if maybe() {
			row.B = ptr(int8(r.IntN(256) - 128))
		}
		if maybe() {
			row.Sh = ptr(int16(r.IntN(65536) - 32768))
		}
		if maybe() {
			row.I = ptr(r.Int32() - r.Int32())
		}
		if maybe() {
			row.L = ptr(r.Int64() - r.Int64())
		}
		if maybe() {
			row.D9 = ptr(int32(r.IntN(1_999_999_999) - 999_999_999))
		}
		if maybe() {
			row.D18 = ptr(r.Int64N(2e17) - 1e17)
		}
		if maybe() {
			row.D30 = ptr(decimalBytes13(r))
		}
		if maybe() {
			row.Dt = ptr(int32(r.IntN(40000) - 20000))
		}
		if maybe() {
			row.Ts = ptr(r.Int64N(4e15) - 2e15)
		}
		if maybe() {
			row.Tn = ptr(r.Int64N(4e15) - 2e15)
		}
		if maybe() {
			row.Tm = ptr(r.Int64N(4e12) - 2e12)
		}
		if maybe() {
			row.S = ptr(str())
		}
		if maybe() {
			row.Bin = []byte(str() + "b")
		}
		if maybe() {
			row.Bo = ptr(r.IntN(2) == 0)
		}
		if maybe() {
			row.F = ptr(float32(r.NormFloat64() * 1e3))
		}
		if maybe() {
			row.X = ptr(r.NormFloat64() * 1e6)
		}
		if len(special) > 0 && r.IntN(10) == 0 {
			v := special[r.IntN(len(special))]
			row.X, row.F = ptr(v), ptr(float32(v))
		}
		if maybe() {
			row.St = &struct {
				A    *int64  `parquet:"a,optional"`
				Name *string `parquet:"name,optional"`
			}{}
			if maybe() {
				row.St.A = ptr(r.Int64N(1000) - 500)
			}
			if maybe() {
				row.St.Name = ptr(str())
			}
		}
	}
	return rows
}

// writeRowGroups writes rows in row groups of perGroup rows.
func writeRowGroups[T any](t testing.TB, rows []T, perGroup int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rows.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f, parquet.MaxRowsPerRowGroup(perGroup))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// duckRow runs one query in DuckDB (node API) and returns its single row,
// every value as DuckDB's own text (or null).
func duckRow(t *testing.T, sql string) map[string]*string {
	t.Helper()
	dir := testenv.NodeDir(t, "@duckdb/node-api")
	if dir == "" {
		return nil
	}
	const script = `import { DuckDBInstance } from '@duckdb/node-api';
const c = await (await DuckDBInstance.create(':memory:')).connect();
const r = await c.runAndReadAll(process.argv[1]);
console.log(JSON.stringify(r.getRowObjectsJson()));`
	cmd := exec.Command("node", "--input-type=module", "-e", script, sql)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb %q: %v\n%s", sql, err, out)
	}
	var rows []map[string]*string
	if err := json.Unmarshal(out, &rows); err != nil || len(rows) != 1 {
		t.Fatalf("duckdb output %q: %v", out, err)
	}
	return rows[0]
}

// statsColumn is how DuckDB computes a column's expected statistics.
type statsColumn struct {
	path   []string
	sql    string // the column expression
	bounds string // "" none; "text", "int", "float", "ts", "tsntz", "string"
}

var typesColumns = []statsColumn{
	{[]string{"b"}, "b", "int"}, {[]string{"sh"}, "sh", "int"}, {[]string{"i"}, "i", "int"}, {[]string{"l"}, "l", "int"},
	{[]string{"d9"}, "d9", "text"}, {[]string{"d18"}, "d18", "text"}, {[]string{"d30"}, "d30", "text"}, {[]string{"dt"}, "dt", "text"},
	{[]string{"ts"}, "epoch_us(ts)", "ts"}, {[]string{"tn"}, "epoch_us(tn)", "tsntz"}, {[]string{"tm"}, "epoch_us(tm)", "ts"},
	{[]string{"s"}, "s", "string"}, {[]string{"bin"}, "bin", ""}, {[]string{"bo"}, "bo", ""},
	{[]string{"f"}, "f", "float"}, {[]string{"x"}, "x", "float"},
	{[]string{"st", "a"}, "st.a", "int"}, {[]string{"st", "name"}, "st.name", "string"}, {[]string{"n"}, "n", "int"},
}

// TestStatsMatchDuckDB appends files of every statistics type and checks
// each add's statistics against what DuckDB computes from the same file:
// nullCount exact, min and max exact (strings truncated, timestamps to ms
// as the protocol says) or absent, never tighter than the data. The same
// files with null_count removed from the footer, and with no footer
// statistics at all, must give the same statistics (computed from the
// values then).
func TestStatsMatchDuckDB(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(uint64(seed), 12))
	for _, tc := range []struct {
		name    string
		special []float64
	}{
		{"plain", nil}, {"nan", []float64{math.NaN()}}, {"inf", []float64{math.Inf(1), math.Inf(-1)}},
		{"nan-and-inf", []float64{math.NaN(), math.Inf(1)}},
	} {
		rows := randomTypesRows(r, 50+r.IntN(200), tc.special)
		src := writeRowGroups(t, rows, int64(7+r.IntN(40)))
		for _, drop := range []pqfile.StatsDrop{pqfile.KeepStatistics, pqfile.DropNullCount, pqfile.DropAllStatistics} {
			t.Run(fmt.Sprintf("%s/drop%d", tc.name, drop), func(t *testing.T) {
				path := src
				if drop != pqfile.KeepStatistics {
					path = dropStatsFile(t, src, func(int) pqfile.StatsDrop { return drop })
				}
				stats := appendAndStats(t, testTable{schema: typesSchema, config: map[string]string{configNumIndexed: "-1"}}, path)
				checkStatsAgainstDuckDB(t, path, stats, typesColumns)
			})
		}
	}
}

func dropStatsFile(t *testing.T, src string, drop func(int) pqfile.StatsDrop) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pqfile.DropStatistics(data, drop)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cut.parquet")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// appendAndStats appends one file to a new table and returns its add's stats.
func appendAndStats(t *testing.T, tt testTable, path string) map[string]json.RawMessage {
	t.Helper()
	dir := tt.create(t)
	res, err := newCommitter(t, dir).Append(context.Background(), []File{{LocalPath: path, Name: "f.parquet"}})
	if err != nil {
		t.Fatal(err)
	}
	add := addFor(t, latest(t, dir), res.Added[0])
	var stats map[string]json.RawMessage
	if err := json.Unmarshal([]byte(add.Stats), &stats); err != nil {
		t.Fatalf("stats %q: %v", add.Stats, err)
	}
	return stats
}

func checkStatsAgainstDuckDB(t *testing.T, path string, stats map[string]json.RawMessage, cols []statsColumn) {
	t.Helper()
	var sel []string
	for k, c := range cols {
		sel = append(sel, fmt.Sprintf("(count(*) - count(%s))::VARCHAR n%d", c.sql, k))
		if c.bounds != "" {
			sel = append(sel, fmt.Sprintf("min(%[1]s)::VARCHAR lo%[2]d, max(%[1]s)::VARCHAR hi%[2]d", c.sql, k))
		}
		if c.bounds == "float" {
			sel = append(sel, fmt.Sprintf("coalesce(bool_or(isnan(%[1]s) or isinf(%[1]s)), false)::VARCHAR sp%[2]d", c.sql, k))
		}
	}
	sel = append(sel, "count(*)::VARCHAR total")
	duck := duckRow(t, "select "+strings.Join(sel, ", ")+" from read_parquet('"+path+"')")
	if duck == nil {
		return
	}
	if got := string(stats["numRecords"]); got != *duck["total"] {
		t.Errorf("numRecords %s, DuckDB counts %s", got, *duck["total"])
	}
	for k, c := range cols {
		name := dotted(c.path)
		if got, want := statIn(stats["nullCount"], c.path), *duck[fmt.Sprintf("n%d", k)]; got != want {
			t.Errorf("nullCount.%s = %s, DuckDB counts %s", name, got, want)
		}
		lo, hi := statIn(stats["minValues"], c.path), statIn(stats["maxValues"], c.path)
		dlo, dhi := duck[fmt.Sprintf("lo%d", k)], duck[fmt.Sprintf("hi%d", k)]
		if c.bounds == "" || dlo == nil || (c.bounds == "float" && *duck[fmt.Sprintf("sp%d", k)] == "true") {
			if lo != "" || hi != "" {
				t.Errorf("%s: bounds [%s, %s] written, want none (DuckDB: [%v, %v])", name, lo, hi, textOf(dlo), textOf(dhi))
			}
			continue
		}
		wantLo, wantHi := expectedBound(t, c.bounds, *dlo, false), expectedBound(t, c.bounds, *dhi, true)
		if lo != wantLo || hi != wantHi {
			t.Errorf("%s: bounds [%s, %s], want [%s, %s] (DuckDB [%s, %s])", name, lo, hi, wantLo, wantHi, *dlo, *dhi)
		}
	}
}

// expectedBound turns DuckDB's min or max into the JSON text the stats
// must hold, applying the protocol's truncation rules.
func expectedBound(t *testing.T, kind, v string, isMax bool) string {
	t.Helper()
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	switch kind {
	case "int":
		return v
	case "text":
		if strings.Contains(v, "-") && len(v) == 10 && v[4] == '-' {
			return quote(v) // a date
		}
		return v
	case "float":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatal(err)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case "ts", "tsntz":
		us, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ms := us / 1000
		if us < 0 && us%1000 != 0 {
			ms--
		}
		if kind == "ts" {
			return quote(time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
		}
		return quote(time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000"))
	case "string":
		r := []rune(v)
		if len(r) <= 32 {
			return quote(v)
		}
		if !isMax {
			return quote(string(r[:32]))
		}
		return quote(sparkMaxPrefix(r))
	}
	t.Fatalf("unknown bound kind %s", kind)
	return ""
}

// sparkMaxPrefix restates Spark's truncateMaxStringAgg for a 32-character
// prefix (the table default), independently of the code under test.
func sparkMaxPrefix(r []rune) string {
	for n := 32; n < len(r) && n <= 64; n++ {
		if r[n] < 0x7f {
			return string(r[:n]) + "\x7f"
		}
		if r[n] != utf8.MaxRune {
			return string(r[:n]) + string(rune(utf8.MaxRune))
		}
	}
	return string(r) // never reached with strings of at most 45 characters
}

// statIn returns the JSON text at a nested path of a stats object ("" when absent).
func statIn(obj json.RawMessage, path []string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return ""
	}
	return statAt(m, path)
}

func textOf(p *string) string {
	if p == nil {
		return "NULL"
	}
	return *p
}

// decimalBytes13 draws a 13-byte big-endian two's complement unscaled
// decimal (up to 30 digits), negative half the time.
func decimalBytes13(r *rand.Rand) [13]byte {
	digits := make([]byte, 1+r.IntN(30))
	for i := range digits {
		digits[i] = byte('0' + r.IntN(10))
	}
	n, _ := new(big.Int).SetString(string(digits), 10)
	if r.IntN(2) == 0 {
		n.Neg(n)
	}
	var out [13]byte
	if n.Sign() < 0 {
		n.Add(n, new(big.Int).Lsh(big.NewInt(1), 13*8))
	}
	n.FillBytes(out[:])
	return out
}
