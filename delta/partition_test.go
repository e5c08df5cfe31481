package delta

import (
	"errors"
	"math"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

func sp(s string) *string { return &s }

func TestParsePartitionValue(t *testing.T) {
	utc := func(y int, mo time.Month, d, h, mi, s, ns int) time.Time {
		return time.Date(y, mo, d, h, mi, s, ns, time.UTC)
	}
	tests := []struct {
		typ  DataType
		in   *string
		want any
	}{
		{PrimitiveType{Name: "long"}, nil, nil},
		{PrimitiveType{Name: "string"}, sp(""), nil},
		{PrimitiveType{Name: "string"}, sp("null"), "null"},
		{PrimitiveType{Name: "string"}, sp("a b/c"), "a b/c"},
		{PrimitiveType{Name: "long"}, sp("-9223372036854775808"), int64(math.MinInt64)},
		{PrimitiveType{Name: "integer"}, sp("1986"), int64(1986)},
		{PrimitiveType{Name: "short"}, sp("-32768"), int64(-32768)},
		{PrimitiveType{Name: "byte"}, sp("127"), int64(127)},
		{PrimitiveType{Name: "double"}, sp("1.0E-5"), 1e-5},
		{PrimitiveType{Name: "double"}, sp("Infinity"), math.Inf(1)},
		{PrimitiveType{Name: "double"}, sp("-Infinity"), math.Inf(-1)},
		{PrimitiveType{Name: "float"}, sp("9.9"), float64(float32(9.9))},
		{PrimitiveType{Name: "boolean"}, sp("true"), true},
		{PrimitiveType{Name: "boolean"}, sp("FALSE"), false},
		{PrimitiveType{Name: "date"}, sp("2021-09-08"), utc(2021, 9, 8, 0, 0, 0, 0)},
		{PrimitiveType{Name: "timestamp"}, sp("2020-01-01 08:09:10.001"), utc(2020, 1, 1, 8, 9, 10, 1e6)},
		{PrimitiveType{Name: "timestamp"}, sp("1969-01-01 00:00:00"), utc(1969, 1, 1, 0, 0, 0, 0)},
		{PrimitiveType{Name: "timestamp"}, sp("1971-07-22T03:06:40.000000Z"), utc(1971, 7, 22, 3, 6, 40, 0)},
		{PrimitiveType{Name: "timestamp"}, sp("2024-01-01T10:00:00.5+02:00"), utc(2024, 1, 1, 8, 0, 0, 5e8)},
		{PrimitiveType{Name: "timestamp"}, sp("2024-01-01T10:00:00"), utc(2024, 1, 1, 10, 0, 0, 0)},
		{PrimitiveType{Name: "timestamp_ntz"}, sp("2021-11-18 02:30:00.123456"), utc(2021, 11, 18, 2, 30, 0, 123456000)},
		{PrimitiveType{Name: "binary"}, sp("😈"), []byte("😈")},
		{DecimalType{Precision: 12, Scale: 5}, sp("-2342342.23423"), big.NewRat(-234234223423, 100000)},
		{DecimalType{Precision: 12, Scale: 5}, sp("234.00000"), big.NewRat(234, 1)},
		{DecimalType{Precision: 10, Scale: 10}, sp("0E-10"), new(big.Rat)},
		{DecimalType{Precision: 1, Scale: 0}, sp("1"), big.NewRat(1, 1)},
	}
	for _, tt := range tests {
		got, err := ParsePartitionValue(tt.typ, tt.in)
		if err != nil {
			t.Errorf("ParsePartitionValue(%s, %q): %v", tt.typ, deref(tt.in), err)
			continue
		}
		if !partitionValueEqual(got, tt.want) {
			t.Errorf("ParsePartitionValue(%s, %q) = %#v, want %#v", tt.typ, deref(tt.in), got, tt.want)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func partitionValueEqual(a, b any) bool {
	switch x := a.(type) {
	case *big.Rat:
		y, ok := b.(*big.Rat)
		return ok && x.Cmp(y) == 0
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y) && x.Location() == time.UTC
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	}
	return reflect.DeepEqual(a, b)
}

func TestParsePartitionValueErrors(t *testing.T) {
	tests := []struct {
		typ DataType
		in  string
	}{
		{PrimitiveType{Name: "byte"}, "128"}, {PrimitiveType{Name: "short"}, "40000"}, {PrimitiveType{Name: "integer"}, "2147483648"},
		{PrimitiveType{Name: "long"}, "1.5"}, {PrimitiveType{Name: "long"}, "abc"}, {PrimitiveType{Name: "double"}, "1e400"},
		{PrimitiveType{Name: "boolean"}, "1"}, {PrimitiveType{Name: "boolean"}, "yes"}, {PrimitiveType{Name: "date"}, "2021-13-01"},
		{PrimitiveType{Name: "date"}, "2021-01-01 00:00:00"}, {PrimitiveType{Name: "timestamp"}, "yesterday"},
		{PrimitiveType{Name: "timestamp_ntz"}, "2021-11-18T25:00:00"}, {DecimalType{Precision: 5, Scale: 2}, "1.234"},
		{DecimalType{Precision: 5, Scale: 2}, "1234.5"}, {DecimalType{Precision: 5, Scale: 2}, "1/2"}, {DecimalType{Precision: 5, Scale: 2}, "x"},
		{PrimitiveType{Name: "variant"}, "x"}, {PrimitiveType{Name: "geometry(OGC:CRS84)"}, "x"},
		{&StructType{}, "x"}, {&ArrayType{ElementType: PrimitiveType{Name: "long"}}, "x"},
	}
	for _, tt := range tests {
		_, err := ParsePartitionValue(tt.typ, sp(tt.in))
		if !errors.Is(err, ErrCorruptLog) {
			t.Errorf("ParsePartitionValue(%s, %q) = %v, want ErrCorruptLog", tt.typ, tt.in, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.in) || !strings.Contains(err.Error(), tt.typ.String()) {
			t.Errorf("error %q should name value %q and type %s", err, tt.in, tt.typ)
		}
	}
}

func TestFormatPartitionValue(t *testing.T) {
	ts := time.Date(2024, 1, 2, 12, 30, 0, 123456789, time.FixedZone("x", 2*3600))
	tests := []struct {
		typ  DataType
		in   any
		want string
	}{
		{PrimitiveType{Name: "string"}, "a=b", "a=b"},
		{PrimitiveType{Name: "long"}, int64(-5), "-5"},
		{PrimitiveType{Name: "byte"}, 127, "127"},
		{PrimitiveType{Name: "integer"}, uint32(7), "7"},
		{PrimitiveType{Name: "double"}, 1.0, "1.0"},
		{PrimitiveType{Name: "double"}, 1e-5, "1.0E-5"},
		{PrimitiveType{Name: "double"}, 12345678.9, "1.23456789E7"},
		{PrimitiveType{Name: "double"}, -0.001, "-0.001"},
		{PrimitiveType{Name: "double"}, math.NaN(), "NaN"},
		{PrimitiveType{Name: "double"}, math.Inf(-1), "-Infinity"},
		{PrimitiveType{Name: "float"}, float32(0.1), "0.1"},
		{PrimitiveType{Name: "float"}, 0.5, "0.5"},
		{PrimitiveType{Name: "boolean"}, true, "true"},
		{PrimitiveType{Name: "date"}, time.Date(2021, 9, 8, 23, 0, 0, 0, time.FixedZone("y", -8*3600)), "2021-09-08"},
		{PrimitiveType{Name: "timestamp"}, ts, "2024-01-02T10:30:00.123456Z"},
		{PrimitiveType{Name: "timestamp_ntz"}, ts, "2024-01-02 12:30:00.123456"},
		{PrimitiveType{Name: "binary"}, []byte("hi"), "hi"},
		{DecimalType{Precision: 5, Scale: 2}, big.NewRat(123, 10), "12.30"},
		{DecimalType{Precision: 5, Scale: 2}, "-0.5", "-0.50"},
		{DecimalType{Precision: 5, Scale: 0}, 42, "42"},
	}
	for _, tt := range tests {
		got, err := FormatPartitionValue(tt.typ, tt.in)
		if err != nil || got == nil || *got != tt.want {
			t.Errorf("FormatPartitionValue(%s, %v) = %q, %v; want %q", tt.typ, tt.in, deref(got), err, tt.want)
			continue
		}
		if tt.typ.String() == "timestamp_ntz" || tt.typ.String() == "date" {
			continue // wall-clock types drop the zone on purpose
		}
		back, err := ParsePartitionValue(tt.typ, got)
		if err != nil {
			t.Errorf("round trip of %q: %v", *got, err)
		}
		if want := normalizeForParse(tt.typ, tt.in); !partitionValueEqual(back, want) {
			t.Errorf("round trip of %v via %q = %#v", tt.in, *got, back)
		}
	}
	if got, err := FormatPartitionValue(PrimitiveType{Name: "long"}, nil); got != nil || err != nil {
		t.Errorf("nil value: %v, %v", got, err)
	}
}

// normalizeForParse converts a FormatPartitionValue input of type typ to
// what ParsePartitionValue returns for it.
func normalizeForParse(typ DataType, v any) any {
	if _, ok := typ.(DecimalType); ok {
		switch x := v.(type) {
		case string:
			r, _ := new(big.Rat).SetString(x)
			return r
		case *big.Rat:
			return x
		}
		i, _ := toInt64(v)
		return big.NewRat(i, 1)
	}
	switch x := v.(type) {
	case float32:
		return float64(x)
	case time.Time:
		return x.UTC().Truncate(time.Microsecond)
	}
	if i, ok := toInt64(v); ok {
		return i
	}
	return v
}

func TestFormatPartitionValueErrors(t *testing.T) {
	tests := []struct {
		typ DataType
		in  any
	}{
		{PrimitiveType{Name: "byte"}, 128}, {PrimitiveType{Name: "integer"}, int64(1) << 40}, {PrimitiveType{Name: "long"}, uint64(math.MaxUint64)},
		{PrimitiveType{Name: "long"}, "5"}, {PrimitiveType{Name: "float"}, 0.1}, {PrimitiveType{Name: "boolean"}, "true"},
		{PrimitiveType{Name: "date"}, "2021-01-01"}, {DecimalType{Precision: 5, Scale: 2}, big.NewRat(1, 3)}, {DecimalType{Precision: 3, Scale: 2}, "10.0"},
		{DecimalType{Precision: 5, Scale: 2}, 1.5}, {PrimitiveType{Name: "variant"}, "x"}, {&StructType{}, "x"},
	}
	for _, tt := range tests {
		if got, err := FormatPartitionValue(tt.typ, tt.in); err == nil {
			t.Errorf("FormatPartitionValue(%s, %v) = %q, want error", tt.typ, tt.in, deref(got))
		}
	}
}

func TestHivePathSegment(t *testing.T) {
	tests := []struct {
		col  string
		v    *string
		want string
	}{
		{"p", nil, "p=__HIVE_DEFAULT_PARTITION__"},
		{"p", sp(""), "p=__HIVE_DEFAULT_PARTITION__"},
		{"p", sp("null"), "p=null"},
		{"c2", sp("+ =%0"), "c2=+ %3D%250"},
		{"x", sp("A/A"), "x=A%2FA"},
		{"x", sp(`"#%'*/:=?\^{[]`), "x=%22%23%25%27%2A%2F%3A%3D%3F%5C%5E%7B%5B%5D"},
		{"x", sp("a\x01\x1f\x7fb\x00"), "x=a%01%1F%7Fb%00"},
		{"x", sp("é 😈<>|}~!@$&()+,;"), "x=é 😈<>|}~!@$&()+,;"},
		{"a=b", sp("1"), "a%3Db=1"},
	}
	for _, tt := range tests {
		got := HivePathSegment(tt.col, tt.v)
		if got != tt.want {
			t.Errorf("HivePathSegment(%q, %q) = %q, want %q", tt.col, deref(tt.v), got, tt.want)
			continue
		}
		col, v, err := ParseHiveSegment(got)
		if err != nil || col != tt.col {
			t.Errorf("ParseHiveSegment(%q) = %q, %v", got, col, err)
		}
		if tt.v == nil || *tt.v == "" {
			if v != nil {
				t.Errorf("ParseHiveSegment(%q) value = %q, want nil", got, *v)
			}
		} else if v == nil || *v != *tt.v {
			t.Errorf("ParseHiveSegment(%q) value = %q, want %q", got, deref(v), *tt.v)
		}
	}
}

func TestUnescapeHivePathName(t *testing.T) {
	good := map[string]string{"": "", "plain": "plain", "%2f%2F": "//", "bar+%2522": "bar+%22",
		// %XX runs are UTF-8 bytes (DuckDB, pyarrow); raw UTF-8 stays (Spark).
		"%C3%BCn%C3%AF": "ünï", "ünï": "ünï", "%F0%9F%98%88%3D": "😈=", "\xc3%BC": "ü"}
	for in, want := range good {
		if got, err := UnescapeHivePathName(in); err != nil || got != want {
			t.Errorf("UnescapeHivePathName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"%", "a%2", "%zz", "%%41", "%C3", "%E9t%E9", "\xe9", "%ED%A0%80", "%C0%80"} {
		if _, err := UnescapeHivePathName(in); !errors.Is(err, ErrInvalidPartitionPath) {
			t.Errorf("UnescapeHivePathName(%q) error = %v", in, err)
		}
	}
	for _, seg := range []string{"novalue", "=v", "%3=1", "a=%G0"} {
		if _, _, err := ParseHiveSegment(seg); !errors.Is(err, ErrInvalidPartitionPath) {
			t.Errorf("ParseHiveSegment(%q) error = %v", seg, err)
		}
	}
	if col, v, err := ParseHiveSegment("a=b=c"); err != nil || col != "a" || deref(v) != "b=c" {
		t.Errorf("ParseHiveSegment(a=b=c) = %q, %q, %v", col, deref(v), err)
	}
}

// TestHivePathsFixtures compares the directory each Spark-written add lives
// in with HivePathSegment of its partition values, and checks that the
// directory exists on disk. Writers known to escape differently are
// asserted as differing, so a change in either is noticed.
func TestHivePathsFixtures(t *testing.T) {
	commits := fixtureCommits(t)
	sparkWritten := []string{
		"delta-kernel-rs/golden-data-reader-escaped-chars",
		"delta/golden-hive_deltatbl-special-chars-in-partition-column",
		"delta-kernel-rs/golden-data-reader-partition-values",
		"dat/multi_partitioned",
	}
	for _, name := range sparkWritten {
		match, differ := hivePathStats(t, name, commits[name], true)
		if match == 0 || len(differ) > 0 {
			t.Errorf("%s: %d adds match HivePathSegment, differing: %v", name, match, differ)
		}
	}
	// Kernel-style ISO timestamp values: Spark named the directory from the
	// session-time-zone cast ("2024-01-01 10:00:00"), not from the log value.
	if _, differ := hivePathStats(t, "delta/golden-kernel-timestamp-partition-col-ISO8601",
		commits["delta/golden-kernel-timestamp-partition-col-ISO8601"], false); len(differ) != 2 {
		t.Errorf("ISO8601 timestamp table: differing = %v, want 2", differ)
	}
	// This writer escaped the space as %20, which Spark does not (outside Windows).
	match, differ := hivePathStats(t, "delta-rs/delta-0.8.0-special-partition", commits["delta-rs/delta-0.8.0-special-partition"], true)
	if match != 1 || len(differ) != 1 || !strings.Contains(differ[0], "x=B%20B") {
		t.Errorf("delta-0.8.0-special-partition: match=%d differ=%v; want x=A%%2FA to match and x=B%%20B to differ", match, differ)
	}
	total, mismatched := 0, 0
	for _, name := range sortedKeys(commits) {
		m, d := hivePathStats(t, name, commits[name], false)
		total += m + len(d)
		mismatched += len(d)
		if len(d) > 0 {
			t.Logf("%s: %d adds not in HivePathSegment directories, e.g. %s", name, len(d), d[0])
		}
	}
	t.Logf("%d partitioned adds, %d in directories other than HivePathSegment's", total, mismatched)
}

// hivePathStats counts the adds of a table (column mapping none, partitioned,
// relative paths) whose directory equals the Hive path of their values;
// onDisk also checks that matching directories exist (not every fixture
// ships its data files).
func hivePathStats(t *testing.T, name string, commits []fixtureCommit, onDisk bool) (match int, differ []string) {
	t.Helper()
	var md *Metadata
	for _, c := range commits {
		for _, a := range c.actions {
			if a.MetaData != nil {
				md = a.MetaData
			}
			if a.Add == nil || md == nil || len(md.PartitionColumns) == 0 || md.ColumnMapping() != ColumnMappingNone {
				continue
			}
			p, err := url.PathUnescape(a.Add.Path)
			if err != nil || strings.Contains(p, ":") || strings.HasPrefix(p, "/") {
				continue
			}
			var segs []string
			for _, col := range md.PartitionColumns {
				segs = append(segs, HivePathSegment(col, a.Add.PartitionValues[col]))
			}
			want := strings.Join(segs, "/")
			if filepath.ToSlash(filepath.Dir(p)) == want {
				match++
				if !onDisk {
					continue
				}
				if _, err := os.Stat(filepath.Join(testenv.Fixture(t, name), filepath.FromSlash(want))); err != nil {
					t.Errorf("%s: directory %q of a matching add missing on disk: %v", name, want, err)
				}
			} else {
				differ = append(differ, filepath.Dir(p)+" != "+want)
			}
		}
	}
	return match, differ
}

// TestPartitionValuesFixtures parses every partition value of every add in
// every fixture commit with the type of its column (the value keyed by the
// physical name under column mapping).
func TestPartitionValuesFixtures(t *testing.T) {
	commits := fixtureCommits(t)
	parsed, tables := 0, 0
	for _, name := range sortedKeys(commits) {
		n := checkFixturePartitionValues(t, name, commits[name])
		parsed += n
		if n > 0 {
			tables++
		}
	}
	if parsed < 400 || tables < 40 {
		t.Errorf("parsed %d partition values in %d tables; expected more", parsed, tables)
	}
	t.Logf("parsed %d partition values of %d partitioned tables", parsed, tables)
}

func checkFixturePartitionValues(t *testing.T, name string, commits []fixtureCommit) int {
	t.Helper()
	var parts []*StructField
	var mode ColumnMappingMode
	n := 0
	for _, c := range commits {
		for _, a := range c.actions {
			if a.MetaData != nil && a.MetaData.SchemaString != "" {
				var err error
				if parts, err = a.MetaData.PartitionSchema(); err != nil {
					t.Errorf("%s/%s: %v", name, c.file, err)
				}
				mode = a.MetaData.ColumnMapping()
			}
			if a.Add == nil {
				continue
			}
			for _, f := range parts {
				v, ok := a.Add.PartitionValues[f.PhysicalName(mode)]
				if !ok {
					t.Errorf("%s/%s: add %s has no partition value for %s (physical %s)",
						name, c.file, a.Add.Path, f.Name, f.PhysicalName(mode))
					continue
				}
				if _, err := ParsePartitionValue(f.Type, v); err != nil {
					t.Errorf("%s/%s: %v", name, c.file, err)
				}
				n++
			}
		}
	}
	return n
}

// TestCanonicalPartitionValueAsSpark: the values a writer is given are
// judged as Spark judges them: one null spelling for every input,
// no invalid UTF-8, timestamp_ntz keeping its wall clock when a zone is
// written (Spark's Cast of a string to timestamp_ntz:
// DateTimeUtils.stringToTimestampWithoutTimeZone with allowTimeZone = true),
// timestamp converted to UTC.
func TestCanonicalPartitionValueAsSpark(t *testing.T) {
	ntz, ts := PrimitiveType{Name: "timestamp_ntz"}, PrimitiveType{Name: "timestamp"}
	str := PrimitiveType{Name: "string"}
	tests := []struct {
		typ  DataType
		in   string
		want *string // nil: null
	}{
		{str, HiveDefaultPartition, nil},
		{PrimitiveType{Name: "integer"}, HiveDefaultPartition, nil},
		{str, "", nil},
		{str, "ünï", sp("ünï")},
		{ntz, "2024-01-02T10:00:00+05:00", sp("2024-01-02 10:00:00.000000")},
		{ntz, "2024-01-02 10:00:00-08:00", sp("2024-01-02 10:00:00.000000")},
		{ntz, "2024-01-02T10:00:00Z", sp("2024-01-02 10:00:00.000000")},
		{ntz, "2024-01-02 10:00:00.5", sp("2024-01-02 10:00:00.500000")},
		{ts, "2024-01-02T10:00:00+05:00", sp("2024-01-02T05:00:00.000000Z")},
		{ts, "2024-01-02 10:00:00+05:00", sp("2024-01-02T05:00:00.000000Z")},
		{ts, "2024-01-02 10:00:00", sp("2024-01-02T10:00:00.000000Z")},
	}
	for _, tt := range tests {
		got, err := CanonicalPartitionValue(tt.typ, &tt.in)
		if err != nil || deref(got) != deref(tt.want) || (got == nil) != (tt.want == nil) {
			t.Errorf("CanonicalPartitionValue(%s, %q) = %q, %v; want %q", tt.typ, tt.in, deref(got), err, deref(tt.want))
		}
	}
	for _, in := range []string{"\xe9t\xe9", "a\xff"} {
		if got, err := CanonicalPartitionValue(str, &in); err == nil || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("CanonicalPartitionValue(string, %q) = %q, %v; want a UTF-8 refusal", in, deref(got), err)
		}
	}
}
