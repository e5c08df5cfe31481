package writeback

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/pqfile"
)

type idOptRow struct {
	ID *int64 `parquet:"id,optional"`
}

// A footer with min/max but no null_count proves nothing about nulls: the
// NOT NULL check must read the levels, and nullCount must be counted.
func TestAbsentNullCountIsUnknown(t *testing.T) {
	src := writeParquet(t, "n.parquet", []idOptRow{{ID: ptr[int64](1)}, {}, {ID: ptr[int64](3)}})
	path := dropStatsFile(t, src, func(int) pqfile.StatsDrop { return pqfile.DropNullCount })

	strict := testTable{schema: structSchema(field("id", `"long"`, false, ""))}
	dir := strict.create(t)
	before := listFiles(t, dir)
	_, err := newCommitter(t, dir).Append(context.Background(), []File{{LocalPath: path, Name: "n.parquet"}})
	if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), "column id is not nullable in the table but holds nulls") {
		t.Errorf("append of a null into NOT NULL id: %v, want refused", err)
	}
	if !reflect.DeepEqual(before, listFiles(t, dir)) {
		t.Errorf("refused append changed the table")
	}

	stats := appendAndStats(t, testTable{schema: structSchema(field("id", `"long"`, true, ""))}, path)
	if got := statIn(stats["nullCount"], []string{"id"}); got != "1" {
		t.Errorf("nullCount.id = %q, want 1 (counted from the levels)", got)
	}
}

type nestedNotNullRow struct {
	St *struct {
		X int64 `parquet:"x"`
	} `parquet:"st,optional"`
}

// A non-nullable field of a nullable struct: Spark refuses a row whose
// struct is null (st.x IS NOT NULL is false then), and so must we, even
// though the Parquet field is required and holds no null of its own.
func TestNestedNotNullUnderNullParent(t *testing.T) {
	tt := testTable{schema: structSchema(field("st", structSchema(field("x", `"long"`, false, "")), true, ""))}
	type st = struct {
		X int64 `parquet:"x"`
	}
	for _, tc := range []struct {
		name string
		rows []nestedNotNullRow
		ok   bool
	}{
		{"parent present", []nestedNotNullRow{{St: &st{X: 1}}, {St: &st{X: 2}}}, true},
		{"parent null", []nestedNotNullRow{{St: &st{X: 1}}, {}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tt.create(t)
			src := writeParquet(t, "st.parquet", tc.rows)
			_, err := newCommitter(t, dir).Append(context.Background(), []File{{LocalPath: src, Name: "st.parquet"}})
			if tc.ok && err != nil {
				t.Fatalf("append: %v", err)
			}
			if !tc.ok && (!errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), "column st.x is not nullable")) {
				t.Errorf("append with st null: %v, want refused naming st.x", err)
			}
		})
	}
}

type clusterRow struct {
	C *int64  `parquet:"c,optional"`
	V *string `parquet:"v,optional"`
}

// Clustering columns get statistics in every add, computed from the
// values when the footer has none, even when the table's statistics
// columns leave them out; one that cannot have exact bounds refuses.
func TestClusteringColumnsAlwaysHaveStats(t *testing.T) {
	tt := testTable{
		schema:   structSchema(field("v", `"string"`, true, ""), field("c", `"long"`, true, "")),
		config:   map[string]string{configNumIndexed: "0"},
		protocol: `{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["clustering","domainMetadata"]}`,
		extra:    []string{`{"domainMetadata":{"domain":"delta.clustering","configuration":"{\"clusteringColumns\":[[\"c\"]]}","removed":false}}`},
	}
	src := writeParquet(t, "c.parquet", []clusterRow{{C: ptr[int64](7), V: ptr("a")}, {C: ptr[int64](-2)}, {}})
	path := dropStatsFile(t, src, func(int) pqfile.StatsDrop { return pqfile.DropAllStatistics })
	stats := appendAndStats(t, tt, path)
	for k, want := range map[string]string{"minValues": "-2", "maxValues": "7", "nullCount": "1"} {
		if got := statIn(stats[k], []string{"c"}); got != want {
			t.Errorf("%s.c = %q, want %s", k, got, want)
		}
	}
	if got := statIn(stats["nullCount"], []string{"v"}); got != "" {
		t.Errorf("nullCount.v = %s, want none (not a statistics column)", got)
	}

	type fc struct {
		C *float64 `parquet:"c,optional"`
	}
	ft := tt
	ft.schema = structSchema(field("c", `"double"`, true, ""))
	dir := ft.create(t)
	nan := writeParquet(t, "nan.parquet", []fc{{C: ptr(1.0)}, {C: ptr(nanValue())}})
	_, err := newCommitter(t, dir).Append(context.Background(), []File{{LocalPath: nan, Name: "nan.parquet"}})
	if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), "clustering column c needs statistics") {
		t.Errorf("clustering column with NaN: %v, want refused", err)
	}
}

func nanValue() float64 {
	var zero float64
	return zero / zero
}
