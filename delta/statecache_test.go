package delta

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/deltafs/deltafs/internal/scalegen"
)

// liveKeys lists a snapshot's live files as sorted "path dv" strings.
func liveKeys(s *Snapshot) []string {
	var out []string
	for _, a := range s.Files() {
		out = append(out, fmt.Sprintf("%s %s %d", a.Path, a.DeletionVector.UniqueID(), a.Size))
	}
	slices.Sort(out)
	return out
}

// A snapshot evicted from a small cache is rebuilt on demand, identical;
// the cache stays within its budget whatever was touched; a long replay
// keeps intermediate states, so a version after one is built from it.
func TestStateCacheEvictsAndRebuildsIdentical(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: dir, Commits: 2500, FilesPerCommit: 2, MaxLive: 3000}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const budget = 2 << 20
	tbl := Open(dirStore{dir}, Options{StateBytes: budget})
	first, err := tbl.Snapshot(ctx, 1234)
	if err != nil {
		t.Fatal(err)
	}
	want := liveKeys(first)
	if len(want) != 2470 {
		t.Fatalf("@v1234 has %d files, want 2470", len(want))
	}
	// Only the last checkpoint exists (2499): 1234 was replayed from
	// version 0, keeping a state at 999.
	if _, k, ok := tbl.nearestState(0, 1233); !ok || k.version != 999 {
		t.Errorf("no intermediate state at 999 after replaying 0..1234 (nearest %+v, %v)", k, ok)
	}
	for v := int64(1300); v < 2500; v += 25 {
		if _, err := tbl.Snapshot(ctx, v); err != nil {
			t.Fatal(err)
		}
		if used, _ := tbl.states.Usage(); used > budget+budget/2 {
			t.Fatalf("after @v%d the cache holds %d bytes, budget %d", v, used, budget)
		}
	}
	if _, ok := tbl.cachedSnapshot(1234); ok {
		t.Fatal("@v1234 still cached after touching 48 larger versions with a 2 MiB budget")
	}
	again, err := tbl.Snapshot(ctx, 1234)
	if err != nil {
		t.Fatal(err)
	}
	if again == first {
		t.Fatal("the same snapshot object came back: it was not evicted")
	}
	if !slices.Equal(liveKeys(again), want) || !again.Timestamp().Equal(first.Timestamp()) {
		t.Errorf("rebuilt @v1234 differs: %d files at %s, first %d at %s", len(liveKeys(again)), again.Timestamp(), len(want), first.Timestamp())
	}
}
