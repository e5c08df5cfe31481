package blobstore

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/scalegen"
)

// Counting the size of _history.jsonl of a local table reads each
// commit's first 4 KB (the commitInfo is first) into pooled buffers and
// keeps nothing per version: on a Spark-shaped log (8.5 KB commits: a
// commitInfo of ~400 bytes, then ten adds with statistics of nine
// columns) it allocates less than a commit per version (about 5 KB: the
// commitInfo parsed, summarized and encoded), where reading each commit
// whole through ReadAll's doublings allocated about three commits' worth
// (24 KB), and the heap after a GC does not grow with the versions
// counted. Allocation counts, not times: nothing here depends on the
// machine's speed.
func TestHistorySizeReadsLessThanACommit(t *testing.T) {
	const commits = 2000
	dir := filepath.Join(t.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: dir, Commits: commits, FilesPerCommit: 10, CheckpointEvery: 10,
		Spark: true, DeleteEvery: 100, DeleteFiles: 43}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tbl := delta.Open(st, delta.Options{})
	latest, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "_delta_log", "00000000000000000001.json"))
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n, err := tbl.HistorySize(ctx, 0, latest.Version())
	runtime.GC()
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	perVersion := int64(after.TotalAlloc-before.TotalAlloc) / commits
	if perVersion > fi.Size() {
		t.Errorf("counting the history allocated %d bytes a version, more than a commit (%d bytes)", perVersion, fi.Size())
	}
	// The listing's times, learnt here (a local log is listed by name),
	// are 8 bytes a commit of its index: anything near a line is kept.
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 64*commits {
		t.Errorf("the heap grew %d bytes (%d a version) counting the history", grown, grown/commits)
	}
	var want int64
	if err := tbl.HistoryEach(ctx, 0, latest.Version(), func(c delta.CommitSummary) error {
		want += int64(len(c.AppendLine(nil)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Errorf("HistorySize %d, the lines are %d bytes", n, want)
	}
	t.Logf("%d bytes allocated a version (commits of %d bytes), history %d bytes", perVersion, fi.Size(), n)
}
