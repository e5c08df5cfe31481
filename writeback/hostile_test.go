package writeback

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/internal/testkit/hostilepq"
	"github.com/deltafs/deltafs/pqfile"
)

// hostileTable is a table with a NOT NULL long and a nullable string.
func hostileTable(t *testing.T) string {
	return testTable{schema: structSchema(field("id", `"long"`, false, ""), field("name", `"string"`, true, ""))}.create(t)
}

// hostileFile is an honest file of the hostile table: ids 0..n-1 and a
// string per row, with footer statistics as a writer states them.
func hostileFile(n int) hostilepq.File {
	names := make([]*string, n)
	for i := range names {
		s := strings.Repeat("x", i%7) + string(rune('a'+i%26))
		names[i] = &s
	}
	return hostilepq.File{Columns: []hostilepq.Column{
		{Name: "id", Type: format.Int64, Pages: []hostilepq.Page{hostilepq.Int64Page(false, hostilepq.Ptrs(n, nil))},
			Stats: &format.Statistics{NullCount: 0, MinValue: hostilepq.Int64(0), MaxValue: hostilepq.Int64(int64(n - 1))}},
		{Name: "name", Type: format.ByteArray, Optional: true, Pages: []hostilepq.Page{hostilepq.StringPage(true, names)}},
	}}
}

// hostileCases are files whose footer or pages lie; every one was
// would be committed (or kill the process) if the footer were trusted.
func hostileCases() map[string]struct {
	file func() hostilepq.File
	want string
} {
	type c = struct {
		file func() hostilepq.File
		want string
	}
	return map[string]c{
		"null_count 0 over real nulls": {func() hostilepq.File {
			f := hostileFile(1000)
			f.Columns[0].Optional = true
			f.Columns[0].Pages = []hostilepq.Page{hostilepq.Int64Page(true, hostilepq.Ptrs(1000, func(i int) bool { return i%100 == 7 }))}
			return f
		}, "column id is not nullable in the table but holds nulls"},
		"footer says 10^12 rows over 1,000": {func() hostilepq.File {
			f := hostileFile(1000)
			f.GroupRows = 1_000_000_000_000
			return f
		}, "1000000000000"},
		"footer bounds below the data": {func() hostilepq.File {
			f := hostileFile(1000)
			f.Columns[0].Stats.MaxValue = hostilepq.Int64(10)
			return f
		}, "max_value is below the largest value"},
		"string max truncated by the writer": {func() hostilepq.File {
			f := hostileFile(1000)
			f.Columns[1].Stats = &format.Statistics{NullCount: 0, MinValue: []byte("a"), MaxValue: []byte("xxx")}
			return f
		}, "max_value is below the largest value"},
		"pages that do not decode": {func() hostilepq.File {
			f := hostileFile(1000)
			p := &f.Columns[0].Pages[0]
			p.Body = p.Body[:len(p.Body)/2] // 500 values where the header says 1000
			p.Uncompressed = int32(len(p.Body))
			return f
		}, "row group 0 column id page 0"},
		"100,000-deep chain of single-child groups": {func() hostilepq.File {
			f := hostileFile(1000)
			f.DeepChain = 100_000
			return f
		}, "schema nested deeper than 64 levels"},
		"gzip page declaring 1 KiB inflating to 3 GiB": {func() hostilepq.File {
			f := hostileFile(1)
			f.Columns[0].Codec = format.Gzip
			f.Columns[0].Pages = []hostilepq.Page{hostilepq.GzipBomb(1024, 3<<30)}
			f.Columns[1].Codec = format.Gzip
			f.Columns[1].Pages[0] = hostilepq.Gzip(f.Columns[1].Pages[0])
			return f
		}, "inflates past its declared 1024 bytes"},
	}
}

// TestAppendRefusesHostileFiles: each hostile file is refused with its
// reason (naming the table's version and the file), the table is left as
// it was, and the validation allocates a bounded amount whatever the file
// claims.
func TestAppendRefusesHostileFiles(t *testing.T) {
	for name, tc := range hostileCases() {
		t.Run(name, func(t *testing.T) {
			dir := hostileTable(t)
			path := writeBytes(t, tc.file().Bytes())
			before := listFiles(t, dir)
			c := newCommitter(t, dir)
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			_, err := c.Append(context.Background(), []File{{LocalPath: path, Name: "hostile.parquet"}})
			runtime.ReadMemStats(&m1)
			if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrInvalidFile containing %q", err, tc.want)
			}
			for _, want := range []string{"hostile.parquet", "version 0"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			if after := listFiles(t, dir); !reflect.DeepEqual(before, after) {
				t.Errorf("table changed by a refused append")
			}
			if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 64<<20 {
				t.Errorf("validation allocated %d MiB", alloc>>20)
			}
			t.Log(err)
		})
	}
}

// TestAppendHonestHostileFile: the writer of the hostile cases writes
// files deltafs accepts, with statistics from the values.
func TestAppendHonestHostileFile(t *testing.T) {
	dir := hostileTable(t)
	f := hostileFile(1000)
	f.Columns[0].Stats.MaxValue = hostilepq.Int64(5000) // a looser bound is still a bound
	path := writeBytes(t, f.Bytes())
	c := newCommitter(t, dir)
	if _, err := c.Append(context.Background(), []File{{LocalPath: path, Name: "honest.parquet"}}); err != nil {
		t.Fatal(err)
	}
	s := latest(t, dir)
	if n := totalRecords(t, s); n != 1000 {
		t.Fatalf("numRecords %d, want 1000", n)
	}
	var stats string
	for _, a := range s.Files() {
		stats = a.Stats
	}
	for _, want := range []string{`"numRecords":1000`, `"maxValues":{"id":999,"name":"z"}`, `"minValues":{"id":0,"name":"a"}`} {
		if !strings.Contains(stats, want) {
			t.Errorf("stats %s lack %s", stats, want)
		}
	}
}

// TestValidationBudgetShared: a page larger than the committer's
// validation budget refuses the file naming the limit.
func TestValidationBudgetShared(t *testing.T) {
	dir := hostileTable(t)
	path := writeBytes(t, hostileFile(10000).Bytes())
	c := New(openTable(t, dir), Options{ValidationBudget: pqfile.NewBudget(64 << 10)})
	t.Cleanup(c.Close)
	_, err := c.Append(context.Background(), []File{{LocalPath: path, Name: "big.parquet"}})
	if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), "validation memory limit of 65536 bytes") {
		t.Fatalf("error %v, want the validation memory limit", err)
	}
}
