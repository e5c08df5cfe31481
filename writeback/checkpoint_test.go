package writeback

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// 25 appends to a row-tracking table at version 0 leave checkpoints at 10
// and 20 and _last_checkpoint at 20; the snapshot read through the
// checkpoint alone (commits <= 20 deleted) equals the one replayed from
// all commits.
func TestAppendsWriteCheckpoints(t *testing.T) {
	dir := testenv.CopyFixture(t, "delta-kernel-rs/crc-full")
	if dir == "" {
		return
	}
	c := newCommitter(t, dir)
	for i := range 25 {
		src := writeParquet(t, fmt.Sprintf("f%d.parquet", i), []idRow{{ID: ptr(int64(i))}, {ID: ptr(int64(-i))}})
		if _, err := c.Append(context.Background(), []File{{LocalPath: src, Name: "f.parquet"}}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	c.WaitCheckpoints() // written after the commits, in the background
	logDir := filepath.Join(dir, "_delta_log")
	var cps []string
	entries, _ := os.ReadDir(logDir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".checkpoint.") {
			cps = append(cps, e.Name())
		}
	}
	want := []string{"00000000000000000010.checkpoint.parquet", "00000000000000000020.checkpoint.parquet"}
	if !reflect.DeepEqual(cps, want) {
		t.Fatalf("checkpoints %v, want %v", cps, want)
	}
	var lc struct{ Version int64 }
	data, err := os.ReadFile(filepath.Join(logDir, "_last_checkpoint"))
	if err != nil || json.Unmarshal(data, &lc) != nil || lc.Version != 20 {
		t.Fatalf("_last_checkpoint %s (%v), want version 20", data, err)
	}

	replayed := copyWithout(t, dir, func(name string) bool {
		return strings.Contains(name, ".checkpoint.") || name == "_last_checkpoint"
	})
	viaCheckpoint := copyWithout(t, dir, func(name string) bool {
		v, ok := delta.ParseLogName(name)
		return ok && v.Kind == delta.KindCommit && v.Version <= 20
	})
	a, b := latest(t, replayed), latest(t, viaCheckpoint)
	if a.Version() != 25 || b.Version() != 25 {
		t.Fatalf("versions %d and %d, want 25", a.Version(), b.Version())
	}
	if !reflect.DeepEqual(a.Protocol(), b.Protocol()) || !reflect.DeepEqual(a.Metadata(), b.Metadata()) {
		t.Errorf("protocol/metadata differ through the checkpoint")
	}
	if fa, fb := fileSummary(a), fileSummary(b); !reflect.DeepEqual(fa, fb) {
		t.Errorf("live files differ through the checkpoint:\n%v\n%v", fa, fb)
	}
	if h := hwm(t, b); h != 49 {
		t.Errorf("row id high-water mark %d through the checkpoint, want 49", h)
	}
}

// copyWithout copies a table dir, leaving out the _delta_log entries drop
// selects.
func copyWithout(t *testing.T, dir string, drop func(name string) bool) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "table")
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if filepath.Dir(rel) == "_delta_log" && drop(fi.Name()) {
			return nil
		}
		return copyFile(p, filepath.Join(dst, rel))
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func fileSummary(s *delta.Snapshot) []string {
	var out []string
	for _, a := range s.Files() {
		pv, _ := json.Marshal(a.PartitionValues)
		out = append(out, fmt.Sprintf("%s %d %d %s %s %v %v", a.Path, a.Size, a.ModificationTime, pv, a.Stats,
			deref(a.BaseRowID), deref(a.DefaultRowCommitVersion)))
	}
	sort.Strings(out)
	return out
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
