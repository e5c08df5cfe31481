package writeback

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

type (
	wrongColumnRow struct {
		Nope *int64 `parquet:"nope,optional"`
	}
	wrongTypeRow struct {
		Number *string `parquet:"number,optional"`
	}
	notNullRow struct {
		Integer *int32 `parquet:"integer,optional"`
	}
	nestedAsStringRow struct {
		NestedStruct *string `parquet:"nested_struct,optional"`
	}
)

// refuseCase is a file each table must refuse with ErrInvalidFile, leaving
// the table exactly as it was.
type refuseCase struct {
	name    string
	fixture string
	file    func(t *testing.T) string
	part    map[string]*string
	want    string // in the error message
}

func refuseCases() []refuseCase {
	good := func(t *testing.T) string {
		return writeParquet(t, "good.parquet", []numberRow{{Number: ptr[int64](1)}})
	}
	return []refuseCase{
		{name: "not parquet", fixture: "dat/basic_append", want: "no PAR1 magic at the start",
			file: func(t *testing.T) string { return writeBytes(t, []byte("letter,number\na,1\n")) }},
		{name: "empty file", fixture: "dat/basic_append", want: "empty file",
			file: func(t *testing.T) string { return writeBytes(t, nil) }},
		{name: "truncated parquet", fixture: "dat/basic_append", want: "truncated",
			file: func(t *testing.T) string {
				data, err := os.ReadFile(good(t))
				if err != nil {
					t.Fatal(err)
				}
				return writeBytes(t, data[:len(data)/2])
			}},
		{name: "wrong column", fixture: "dat/basic_append", want: "column(s) not in the table schema: nope",
			file: func(t *testing.T) string {
				return writeParquet(t, "wrong.parquet", []wrongColumnRow{{Nope: ptr[int64](1)}})
			}},
		{name: "wrong type", fixture: "dat/basic_append", want: "column number has the wrong type: the table wants long, the file has optional BYTE_ARRAY (STRING)",
			file: func(t *testing.T) string {
				return writeParquet(t, "type.parquet", []wrongTypeRow{{Number: ptr("1")}})
			}},
		{name: "wrong nested type", fixture: "delta/golden-table-with-columnmapping-mode-name", want: "column nested_struct has the wrong type",
			file: func(t *testing.T) string {
				return writeParquet(t, "nested.parquet", []nestedAsStringRow{{NestedStruct: ptr("x")}})
			}},
		{name: "null in non-nullable", fixture: "delta-rs/delta-stats-optional", want: "column integer is not nullable in the table but holds nulls",
			file: func(t *testing.T) string {
				return writeParquet(t, "nulls.parquet", []notNullRow{{Integer: ptr[int32](1)}, {}})
			}},
		{name: "unparsable partition value", fixture: "delta-kernel-rs/golden-dv-partitioned-with-checkpoint",
			part: map[string]*string{"part": ptr("abc")}, want: `partition column part: partition value "abc" is not a integer`,
			file: func(t *testing.T) string {
				return writeParquet(t, "p.parquet", []dvPartRow{{Col1: ptr[int32](1)}})
			}},
		{name: "missing partition value", fixture: "dat/basic_partitioned", file: good,
			want: "no value for partition column letter: put the file in inbox/letter=<string>/"},
		{name: "unknown partition column", fixture: "dat/basic_partitioned", file: good,
			part: map[string]*string{"letter": ptr("a"), "nope": ptr("1")}, want: `"nope" is not a partition column`},
		{name: "partition values on an unpartitioned table", fixture: "dat/basic_append", file: good,
			part: map[string]*string{"letter": ptr("a")}, want: "the table is not partitioned"},
		{name: "partition column in the file", fixture: "dat/basic_partitioned", part: map[string]*string{"letter": ptr("a")},
			want: `column "letter" is a partition column`,
			file: func(t *testing.T) string {
				return writeParquet(t, "withpart.parquet", []basicRow{{Letter: ptr("a"), Number: ptr[int64](1)}})
			}},
	}
}

func writeBytes(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file.parquet")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAppendRefusesBadFiles(t *testing.T) {
	for _, tc := range refuseCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := testenv.CopyFixture(t, tc.fixture)
			if dir == "" {
				return
			}
			before := listFiles(t, dir)
			c := newCommitter(t, dir)
			f := File{LocalPath: tc.file(t), Name: "bad.parquet", PartitionValues: tc.part}
			verr := c.Validate(context.Background(), f)
			_, err := c.Append(context.Background(), []File{f})
			for _, e := range []error{verr, err} {
				if !errors.Is(e, ErrInvalidFile) || !strings.Contains(e.Error(), tc.want) {
					t.Errorf("error %v, want ErrInvalidFile containing %q", e, tc.want)
				}
				if e != nil && !strings.Contains(e.Error(), "bad.parquet") {
					t.Errorf("error %q does not name the file", e)
				}
			}
			if after := listFiles(t, dir); !reflect.DeepEqual(before, after) {
				t.Errorf("table changed by a refused append")
			}
		})
	}
}

// One bad file refuses the whole multi-file append.
func TestAppendMultiFileAllOrNothing(t *testing.T) {
	dir := testenv.CopyFixture(t, "dat/basic_append")
	if dir == "" {
		return
	}
	before := listFiles(t, dir)
	good := writeParquet(t, "good.parquet", []numberRow{{Number: ptr[int64](1)}})
	bad := writeBytes(t, []byte("not parquet at all"))
	_, err := newCommitter(t, dir).Append(context.Background(), []File{
		{LocalPath: good, Name: "good.parquet"}, {LocalPath: bad, Name: "bad.parquet"},
	})
	if !errors.Is(err, ErrInvalidFile) {
		t.Fatalf("error %v, want ErrInvalidFile", err)
	}
	if after := listFiles(t, dir); !reflect.DeepEqual(before, after) {
		t.Errorf("table changed by a refused append")
	}
}

func TestAppendNonNullableWithoutNulls(t *testing.T) {
	dir := testenv.CopyFixture(t, "delta-rs/delta-stats-optional")
	if dir == "" {
		return
	}
	src := writeParquet(t, "ok.parquet", []notNullRow{{Integer: ptr[int32](1)}, {Integer: ptr[int32](2)}})
	if _, err := newCommitter(t, dir).Append(context.Background(), []File{{LocalPath: src, Name: "ok.parquet"}}); err != nil {
		t.Fatalf("optional column without nulls for a non-nullable column: %v", err)
	}
}

func TestUnwritableTables(t *testing.T) {
	for _, tc := range []struct{ fixture, want string }{
		{"delta-rs/checkpoint-v2-table", "identityColumns (identity columns in use: column id)"},
		{"delta/spark-dbr_8_1_generated_columns", "generatedColumns (generated columns in use: column c2)"},
		{"delta-kernel-rs/partitioned_with_materialize_feature", "materializePartitionColumns"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			dir := testenv.CopyFixture(t, tc.fixture)
			if dir == "" {
				return
			}
			before := listFiles(t, dir)
			c := newCommitter(t, dir)
			werr := c.Writable(context.Background())
			src := writeParquet(t, "x.parquet", []idRow{{ID: ptr[int64](1)}})
			_, err := c.Append(context.Background(), []File{{LocalPath: src, Name: "x.parquet"}})
			for _, e := range []error{werr, err} {
				if !errors.Is(e, ErrNotWritable) || !strings.Contains(e.Error(), tc.want) {
					t.Errorf("error %v, want ErrNotWritable naming %q", e, tc.want)
				}
			}
			if after := listFiles(t, dir); !reflect.DeepEqual(before, after) {
				t.Errorf("unwritable table changed")
			}
		})
	}
}
