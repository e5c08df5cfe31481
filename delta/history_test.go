package delta

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/scalegen"
)

// countingList is a dirStore that counts its listings.
type countingList struct {
	dirStore
	lists *atomic.Int64
}

func (c countingList) List(ctx context.Context, dir, from string) ([]ObjectInfo, error) {
	c.lists.Add(1)
	return c.dirStore.List(ctx, dir, from)
}

// Reading the history in chunks, as a reader of _history.jsonl does, lists
// the log once, not once a chunk: a listing of a long local log reads its
// whole directory (100,000 commits read in 512-version chunks took 134 s).
func TestHistoryChunksListOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: dir, Commits: 600, FilesPerCommit: 1}); err != nil {
		t.Fatal(err)
	}
	var lists atomic.Int64
	tbl := Open(countingList{dirStore{dir}, &lists}, Options{})
	ctx := context.Background()
	latest, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := lists.Load()
	n := 0
	for from := int64(0); from <= latest.Version(); from += 50 {
		if err := tbl.HistoryEach(ctx, from, min(from+49, latest.Version()), func(CommitSummary) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if n != 600 {
		t.Fatalf("%d summaries, want 600", n)
	}
	if got := lists.Load() - before; got > 1 {
		t.Errorf("12 chunks of history listed the log %d times, want at most once", got)
	}
}
