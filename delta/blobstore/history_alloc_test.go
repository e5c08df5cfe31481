package blobstore

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
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
	ctx := context.Background()
	dir, st := sparkStore(t, commits)
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

// countingReads is a Store that counts its ranged reads and stats; it
// embeds the Store, so every capability (LocalDirer, NameLister, the
// readers' InfoReader) stays visible.
type countingReads struct {
	*Store
	reads, stats *atomic.Int64
}

func (c countingReads) ReadRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	c.reads.Add(1)
	return c.Store.ReadRange(ctx, key, off, length)
}

func (c countingReads) Stat(ctx context.Context, key string) (delta.ObjectInfo, error) {
	c.stats.Add(1)
	return c.Store.Stat(ctx, key)
}

// ls -l of a local file-timed table (VersionsIn, a batch at a time) reads
// each commit's first bytes once, which gives its time (no stat) and its
// history line; the stat of _history.jsonl afterwards reads nothing and
// agrees with the lines HistoryEach produces.
func TestHistorySizeAfterListingReadsNothing(t *testing.T) {
	const commits = 600
	ctx := context.Background()
	_, st := sparkStore(t, commits)
	var reads, stats atomic.Int64
	tbl := delta.Open(countingReads{st, &reads, &stats}, delta.Options{})
	latest, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reads.Store(0)
	stats.Store(0)
	for from := int64(0); from <= latest.Version(); from += 256 {
		infos, errs, err := tbl.VersionsIn(ctx, from, min(from+255, latest.Version()))
		if err != nil {
			t.Fatal(err)
		}
		for i, info := range infos {
			v := from + int64(i)
			if errs[i] != nil || !info.ModTime.Equal(scalegen.CommitTime(v)) {
				t.Fatalf("v%d: %v %v, want time %v", v, info.ModTime, errs[i], scalegen.CommitTime(v))
			}
		}
	}
	if r, s := reads.Load(), stats.Load(); r > commits || s > 10 {
		t.Errorf("listing %d versions: %d reads, %d stats; want a read a commit and no stat", commits, r, s)
	}
	reads.Store(0)
	stats.Store(0)
	n, err := tbl.HistorySize(ctx, 0, latest.Version())
	if err != nil {
		t.Fatal(err)
	}
	if r, s := reads.Load(), stats.Load(); r+s > 0 {
		t.Errorf("the history's size after the listing: %d reads, %d stats, want none", r, s)
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
}

// sparkStore generates a Spark-shaped local table of commits commits and
// opens it; the store is closed when the test ends.
func sparkStore(t *testing.T, commits int) (string, *Store) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: dir, Commits: commits, FilesPerCommit: 10, CheckpointEvery: 10,
		Spark: true, DeleteEvery: 100, DeleteFiles: 43}); err != nil {
		t.Fatal(err)
	}
	st, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return dir, st
}
