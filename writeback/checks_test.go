package writeback

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// checkPartitionPath checks the add's path prefix (as written in the log)
// and that the data file lives at the decoded key.
func checkPartitionPath(prefix string) func(*testing.T, string, *delta.Snapshot, *delta.Snapshot, *delta.Add) {
	return func(t *testing.T, dir string, _, after *delta.Snapshot, add *delta.Add) {
		if !strings.HasPrefix(add.Path, prefix) {
			t.Errorf("add.path %q, want prefix %q", add.Path, prefix)
		}
		key, err := after.DataKey(add)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(key))); err != nil {
			t.Errorf("data file of %q: %v", add.Path, err)
		}
		files, err := after.LiveFiles()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if f.Add == add {
				for col, v := range f.PartitionValues {
					if _, err := delta.ParsePartitionValue(partType(t, after, col), v); err != nil {
						t.Errorf("partition value %s=%v: %v", col, v, err)
					}
				}
				return
			}
		}
		t.Errorf("new file not among the live files")
	}
}

func partType(t *testing.T, s *delta.Snapshot, col string) delta.DataType {
	fields, err := s.Metadata().PartitionSchema()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		if f.Name == col {
			return f.Type
		}
	}
	t.Fatalf("no partition column %s", col)
	return nil
}

// checkPhysicalFile checks that the uploaded file's columns carry the
// physical names (and the field ids in id mode), as the table's own files.
func checkPhysicalFile(wantIDs bool) func(*testing.T, string, *delta.Snapshot, *delta.Snapshot, *delta.Add) {
	return func(t *testing.T, dir string, _, after *delta.Snapshot, add *delta.Add) {
		key, _ := after.DataKey(add)
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
		schema, _ := after.Schema()
		mode := after.Metadata().ColumnMapping()
		nm := delta.NewNameMap(schema, mode)
		for _, col := range pf.Schema().Columns() {
			if _, ok := nm.LogicalPath(col); !ok {
				t.Errorf("leaf %v of the uploaded file is not a physical path of the table", col)
			}
		}
		for _, field := range pf.Schema().Fields() {
			var match *delta.StructField
			for _, sf := range schema.Fields {
				if sf.PhysicalName(mode) == field.Name() {
					match = sf
				}
			}
			if match == nil {
				t.Errorf("column %q of the uploaded file is not a physical name", field.Name())
				continue
			}
			id, _ := match.FieldID()
			if wantIDs && int64(field.ID()) != id {
				t.Errorf("column %s: field id %d, want %d", match.Name, field.ID(), id)
			}
		}
	}
}

func commitICT(t *testing.T, dir string, v int64) int64 {
	t.Helper()
	var ci struct {
		ICT *int64 `json:"inCommitTimestamp"`
		TS  int64  `json:"timestamp"`
	}
	if err := json.Unmarshal(commitLines(t, dir, v)[0]["commitInfo"], &ci); err != nil || ci.ICT == nil {
		t.Fatalf("commit %d: no inCommitTimestamp in the first line (%v)", v, err)
	}
	if ci.TS != *ci.ICT {
		t.Errorf("commit %d: timestamp %d differs from inCommitTimestamp %d", v, ci.TS, *ci.ICT)
	}
	return *ci.ICT
}

func checkICT(t *testing.T, dir string, before, after *delta.Snapshot, _ *delta.Add) {
	prev := commitICT(t, dir, before.Version())
	got := commitICT(t, dir, after.Version())
	if got <= prev {
		t.Errorf("inCommitTimestamp %d not after the previous %d", got, prev)
	}
	if after.Timestamp().UnixMilli() != got {
		t.Errorf("snapshot timestamp %v, want the ICT %d", after.Timestamp(), got)
	}
	// A second append must be strictly later again.
	src := writeParquet(t, "again.parquet", []ictRow{{Name: ptr("cy")}})
	res, err := newCommitter(t, dir).Append(context.Background(),
		[]File{{LocalPath: src, Name: "again.parquet", PartitionValues: map[string]*string{"birthyear": ptr("1991")}}})
	if err != nil {
		t.Fatal(err)
	}
	if next := commitICT(t, dir, res.Version); next <= got {
		t.Errorf("second inCommitTimestamp %d not after %d", next, got)
	}
}

func hwm(t *testing.T, s *delta.Snapshot) int64 {
	t.Helper()
	n, err := rowIDHighWaterMark(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func checkRowTracking(t *testing.T, dir string, before, after *delta.Snapshot, add *delta.Add) {
	old := hwm(t, before)
	n, _ := add.NumRecords()
	if add.BaseRowID == nil || *add.BaseRowID != old+1 {
		t.Errorf("baseRowId %v, want %d (old high-water mark %d)", add.BaseRowID, old+1, old)
	}
	if add.DefaultRowCommitVersion == nil || *add.DefaultRowCommitVersion != after.Version() {
		t.Errorf("defaultRowCommitVersion %v, want %d", add.DefaultRowCommitVersion, after.Version())
	}
	if got := hwm(t, after); got != old+n {
		t.Errorf("new high-water mark %d, want %d", got, old+n)
	}
	for _, a := range before.Files() {
		if a.BaseRowID != nil {
			if r, ok := a.NumRecords(); ok && *a.BaseRowID+r-1 > old {
				t.Errorf("fixture file %s has row ids above the high-water mark", a.Path)
			}
		}
	}
}
