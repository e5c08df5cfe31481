package writeback

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

func ptr[T any](v T) *T { return &v }

// Row shapes of the fixture tables (logical names, as a user writes them).
type (
	basicRow struct {
		Letter *string  `parquet:"letter,optional"`
		Number *int64   `parquet:"number,optional"`
		AFloat *float64 `parquet:"a_float,optional"`
	}
	numberRow struct {
		Number *int64   `parquet:"number,optional"`
		AFloat *float64 `parquet:"a_float,optional"`
	}
	cmInner struct {
		Aca *int32 `parquet:"aca,optional"`
	}
	cmNested struct {
		Aa *string  `parquet:"aa,optional"`
		Ac *cmInner `parquet:"ac,optional"`
	}
	cmRow struct {
		ByteType      *int8     `parquet:"ByteType,optional"`
		IntegerType   *int32    `parquet:"IntegerType,optional"`
		LongType      *int64    `parquet:"LongType,optional"`
		StringType    *string   `parquet:"StringType,optional"`
		Decimal       *int64    `parquet:"decimal,optional,decimal(2:10)"`
		DateType      *int32    `parquet:"DateType,optional,date"`
		TimestampType *int64    `parquet:"TimestampType,optional,timestamp(microsecond)"`
		NestedStruct  *cmNested `parquet:"nested_struct,optional"`
		ArrayOfPrims  []int32   `parquet:"array_of_prims,optional,list"`
	}
	ictRow struct {
		Name *string `parquet:"name,optional"`
		Age  *int32  `parquet:"age,optional"`
	}
	idRow struct {
		ID *int64 `parquet:"id,optional"`
	}
	valueRow struct {
		Value *int32 `parquet:"value,optional"`
	}
	dvPartRow struct {
		Col1 *int32  `parquet:"col1,optional"`
		Col2 *string `parquet:"col2,optional"`
	}
)

var ts0 = time.Date(2024, 3, 5, 10, 11, 12, 345678000, time.UTC)

func cmRows() []cmRow {
	return []cmRow{
		{ByteType: ptr[int8](-3), IntegerType: ptr[int32](7), LongType: ptr[int64](1 << 40), StringType: ptr("alpha"),
			Decimal: ptr[int64](12345), DateType: ptr[int32](19000), TimestampType: ptr(ts0.UnixMicro()),
			NestedStruct: &cmNested{Aa: ptr("n1"), Ac: &cmInner{Aca: ptr[int32](5)}}, ArrayOfPrims: []int32{1, 2}},
		{ByteType: ptr[int8](9), StringType: ptr(strings.Repeat("z", 40)), Decimal: ptr[int64](-250),
			NestedStruct: &cmNested{Aa: ptr("n2")}, ArrayOfPrims: []int32{}},
		{LongType: ptr[int64](-1), TimestampType: ptr(ts0.Add(time.Hour).UnixMicro())},
	}
}

// appendCase is one fixture table and a file to append to it.
type appendCase struct {
	name    string
	fixture string
	write   func(t *testing.T) string
	rows    int64
	part    map[string]*string
	// stats expected in the add, by logical dotted column: [min, max, nullCount] as JSON.
	stats map[string][3]string
	check func(t *testing.T, dir string, before, after *delta.Snapshot, add *delta.Add)
}

func appendCases() []appendCase {
	basic := func(t *testing.T) string {
		return writeParquet(t, "basic.parquet", []basicRow{
			{Letter: ptr("q"), Number: ptr[int64](10), AFloat: ptr(1.5)},
			{Letter: ptr("b"), Number: ptr[int64](-4)},
			{Number: ptr[int64](99), AFloat: ptr(-0.25)},
		})
	}
	return []appendCase{
		{name: "unpartitioned", fixture: "dat/basic_append", write: basic, rows: 3,
			stats: map[string][3]string{"number": {"-4", "99", "0"}, "letter": {`"b"`, `"q"`, "1"}, "a_float": {"-0.25", "1.5", "1"}}},
		{name: "partitioned", fixture: "dat/basic_partitioned", rows: 2, part: map[string]*string{"letter": ptr("z z%")},
			write: func(t *testing.T) string {
				return writeParquet(t, "part.parquet", []numberRow{{Number: ptr[int64](5)}, {Number: ptr[int64](6), AFloat: ptr(2.0)}})
			},
			stats: map[string][3]string{"number": {"5", "6", "0"}},
			check: checkPartitionPath("letter=z%20z%2525/")},
		{name: "partitioned-null", fixture: "dat/basic_partitioned", rows: 1, part: map[string]*string{"letter": nil},
			write: func(t *testing.T) string {
				return writeParquet(t, "null.parquet", []numberRow{{Number: ptr[int64](1)}})
			},
			check: checkPartitionPath("letter=__HIVE_DEFAULT_PARTITION__/")},
		{name: "column-mapping-name", fixture: "delta/golden-table-with-columnmapping-mode-name", rows: 3,
			write: func(t *testing.T) string { return writeParquet(t, "cm.parquet", cmRows()) },
			stats: cmStats(), check: checkPhysicalFile(false)},
		{name: "column-mapping-id", fixture: "delta/golden-table-with-columnmapping-mode-id", rows: 3,
			write: func(t *testing.T) string { return writeParquet(t, "cm.parquet", cmRows()) },
			stats: cmStats(), check: checkPhysicalFile(true)},
		{name: "column-mapping-partitioned", fixture: "delta-kernel-rs/partition_cm_name", rows: 2,
			part: map[string]*string{"category": ptr("books")},
			write: func(t *testing.T) string {
				return writeParquet(t, "v.parquet", []valueRow{{Value: ptr[int32](3)}, {Value: ptr[int32](4)}})
			},
			stats: map[string][3]string{"value": {"3", "4", "0"}},
			check: func(t *testing.T, dir string, before, after *delta.Snapshot, add *delta.Add) {
				const phys = "col-6dc68f07-711d-4f00-8bd6-1f5bc698e8ad"
				if v := add.PartitionValues[phys]; v == nil || *v != "books" || len(add.PartitionValues) != 1 {
					t.Errorf("partitionValues %v, want {%s: books}", add.PartitionValues, phys)
				}
				checkPartitionPath(phys+"=books/")(t, dir, before, after, add)
				checkPhysicalFile(true)(t, dir, before, after, add)
			}},
		{name: "in-commit-timestamps", fixture: "delta-rs/cdc_ict_table", rows: 2, part: map[string]*string{"birthyear": ptr("1990")},
			write: func(t *testing.T) string {
				return writeParquet(t, "ict.parquet", []ictRow{{Name: ptr("ann"), Age: ptr[int32](34)}, {Name: ptr("bo")}})
			},
			stats: map[string][3]string{"age": {"34", "34", "1"}}, check: checkICT},
		{name: "row-tracking-fresh", fixture: "delta-kernel-rs/crc-full", rows: 4,
			write: func(t *testing.T) string {
				return writeParquet(t, "ids.parquet", []idRow{{ID: ptr[int64](1)}, {ID: ptr[int64](2)}, {}, {ID: ptr[int64](4)}})
			},
			check: checkRowTracking},
		{name: "row-tracking-checkpoint", fixture: "delta-rs/table-with-domain-metadata", rows: 2,
			write: func(t *testing.T) string {
				return writeParquet(t, "ids.parquet", []idRow{{ID: ptr[int64](7)}, {ID: ptr[int64](8)}})
			},
			check: checkRowTracking},
		{name: "deletion-vectors", fixture: "delta-kernel-rs/table-with-dv-small", rows: 2,
			write: func(t *testing.T) string {
				return writeParquet(t, "v.parquet", []valueRow{{Value: ptr[int32](100)}, {Value: ptr[int32](-100)}})
			},
			stats: map[string][3]string{"value": {"-100", "100", "0"}}},
		{name: "dv-partitioned-checkpoint", fixture: "delta-kernel-rs/golden-dv-partitioned-with-checkpoint", rows: 1,
			part: map[string]*string{"part": ptr("042")},
			write: func(t *testing.T) string {
				return writeParquet(t, "p.parquet", []dvPartRow{{Col1: ptr[int32](1), Col2: ptr("x")}})
			},
			check: checkPartitionPath("part=42/")},
	}
}

func cmStats() map[string][3]string {
	return map[string][3]string{
		"ByteType":             {"-3", "9", "1"},
		"LongType":             {"-1", "1099511627776", "1"},
		"StringType":           {`"alpha"`, `"` + strings.Repeat("z", 32) + "\u007f" + `"`, "1"},
		"decimal":              {"-2.50", "123.45", "1"},
		"DateType":             {`"2022-01-08"`, `"2022-01-08"`, "2"},
		"TimestampType":        {`"2024-03-05T10:11:12.345Z"`, `"2024-03-05T11:11:12.345Z"`, "1"},
		"nested_struct.aa":     {`"n1"`, `"n2"`, "1"},
		"nested_struct.ac.aca": {"5", "5", "2"},
	}
}

func TestAppendFixtures(t *testing.T) {
	for _, tc := range appendCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := testenv.CopyFixture(t, tc.fixture)
			if dir == "" {
				return
			}
			before := latest(t, dir)
			src := tc.write(t)
			res, err := newCommitter(t, dir).Append(context.Background(),
				[]File{{LocalPath: src, Name: "user file.parquet", PartitionValues: tc.part}})
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			after := latest(t, dir)
			if res.Version != before.Version()+1 || after.Version() != res.Version {
				t.Fatalf("version %d (latest %d), want %d", res.Version, after.Version(), before.Version()+1)
			}
			if len(after.Files()) != len(before.Files())+1 {
				t.Errorf("%d live files, want %d", len(after.Files()), len(before.Files())+1)
			}
			if got, want := totalRecords(t, after), totalRecords(t, before)+tc.rows; got != want {
				t.Errorf("%d records in the new version, want %d", got, want)
			}
			if len(res.Added) != 1 {
				t.Fatalf("Added = %v", res.Added)
			}
			add := addFor(t, after, res.Added[0])
			checkSameRows(t, src, filepath.Join(dir, filepath.FromSlash(res.Added[0])))
			checkStats(t, after, add, tc.rows, tc.stats)
			checkCommitInfo(t, dir, before, res.Version, tc.rows)
			if tc.check != nil {
				tc.check(t, dir, before, after, add)
			}
		})
	}
}

// checkSameRows compares every row of the source and the uploaded file.
func checkSameRows(t *testing.T, src, uploaded string) {
	t.Helper()
	want, _ := readRows(t, src)
	got, _ := readRows(t, uploaded)
	if len(got) != len(want) {
		t.Fatalf("uploaded file has %d rows, source %d", len(got), len(want))
	}
	for i := range want {
		if !parquetRowsEqual(got[i], want[i]) {
			t.Errorf("row %d: uploaded %v, source %v", i, got[i], want[i])
		}
	}
}

func parquetRowsEqual(a, b parquet.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !parquet.Equal(a[i], b[i]) || a[i].DefinitionLevel() != b[i].DefinitionLevel() ||
			a[i].RepetitionLevel() != b[i].RepetitionLevel() || a[i].Column() != b[i].Column() {
			return false
		}
	}
	return true
}

func checkStats(t *testing.T, snap *delta.Snapshot, add *delta.Add, rows int64, want map[string][3]string) {
	t.Helper()
	var st struct {
		NumRecords int64                      `json:"numRecords"`
		Min        map[string]json.RawMessage `json:"minValues"`
		Max        map[string]json.RawMessage `json:"maxValues"`
		Nulls      map[string]json.RawMessage `json:"nullCount"`
	}
	if err := json.Unmarshal([]byte(add.Stats), &st); err != nil {
		t.Fatalf("stats %q: %v", add.Stats, err)
	}
	if st.NumRecords != rows {
		t.Errorf("numRecords %d, want %d", st.NumRecords, rows)
	}
	schema, _ := snap.Schema()
	nm := delta.NewNameMap(schema, snap.Metadata().ColumnMapping())
	for col, w := range want {
		phys, ok := nm.PhysicalPath(strings.Split(col, "."))
		if !ok {
			t.Fatalf("no column %s", col)
		}
		for i, m := range []map[string]json.RawMessage{st.Min, st.Max, st.Nulls} {
			if got := statAt(m, phys); got != w[i] {
				t.Errorf("stats %s[%d] = %s, want %s (stats %s)", col, i, got, w[i], add.Stats)
			}
		}
	}
}

// statAt returns the JSON text at a nested path of a stats map.
func statAt(m map[string]json.RawMessage, path []string) string {
	raw := m[path[0]]
	for _, p := range path[1:] {
		var inner map[string]json.RawMessage
		if json.Unmarshal(raw, &inner) != nil {
			return ""
		}
		raw = inner[p]
	}
	return string(raw)
}

func checkCommitInfo(t *testing.T, dir string, before *delta.Snapshot, v, rows int64) {
	t.Helper()
	lines := commitLines(t, dir, v)
	raw, ok := lines[0]["commitInfo"]
	if !ok {
		t.Fatalf("first line of commit %d is not commitInfo: %v", v, lines[0])
	}
	var ci commitInfo
	if err := json.Unmarshal(raw, &ci); err != nil {
		t.Fatal(err)
	}
	if ci.Operation != "WRITE" || ci.OperationParameters["mode"] != "Append" || !ci.IsBlindAppend ||
		ci.ReadVersion != before.Version() || ci.EngineInfo != "deltafs/test" || len(ci.TxnID) != 36 ||
		ci.OperationMetrics["numFiles"] != "1" || ci.OperationMetrics["numOutputRows"] != itoa(rows) ||
		!reflect.DeepEqual(ci.SourceFiles, []string{"user file.parquet"}) || ci.Timestamp == 0 {
		t.Errorf("commitInfo %s", raw)
	}
	for _, l := range lines[1:] {
		if _, ok := l["metaData"]; ok {
			t.Errorf("blind append wrote metaData")
		}
		if _, ok := l["protocol"]; ok {
			t.Errorf("blind append wrote protocol")
		}
	}
}
