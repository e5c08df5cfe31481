package delta

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/scalegen"
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
	if _, k, ok := tbl.states.nearest(0, 1233); !ok || k.version != 999 {
		t.Errorf("no intermediate state at 999 after replaying 0..1234 (nearest %+v, %v)", k, ok)
	}
	for v := int64(1300); v < 2500; v += 25 {
		if _, err := tbl.Snapshot(ctx, v); err != nil {
			t.Fatal(err)
		}
		if used, _ := tbl.states.lru.Usage(); used > budget+budget/2 {
			t.Fatalf("after @v%d the cache holds %d bytes, budget %d", v, used, budget)
		}
	}
	if _, ok := tbl.states.snapshot(1234); ok {
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

// heapAfterGC is the live heap after a full collection.
func heapAfterGC() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// What a cache of snapshots holds stays within its budget on the heap,
// not only in its counters: a chain of snapshots each built on the one
// before (B <- S1 <- ... <- Sn, as refreshes build them) shares B's
// actions, and once B is evicted the chain's newest holds them alone.
// Two tables share one cache whose budget fits about one table state; the
// chain of the first, then the full state of the second, must leave the
// heap at about one state, where charging the chain only its additions
// kept both tables' states (about twice the budget).
func TestStateCacheBudgetHoldsOnTheHeap(t *testing.T) {
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	for _, d := range dirs {
		if _, err := scalegen.Generate(scalegen.Spec{Dir: d, Commits: 41, FilesPerCommit: 500}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()

	// One full state's estimated cost and heap (v39: 20,000 files).
	base := heapAfterGC()
	calib := NewCaches(1 << 40)
	tbl := Open(dirStore{dirs[0]}, Options{Caches: calib})
	if _, err := tbl.Snapshot(ctx, 39); err != nil {
		t.Fatal(err)
	}
	cost, _ := calib.states.Usage()
	held := heapAfterGC() - base
	runtime.KeepAlive(tbl)
	tbl, calib = nil, nil
	perByte := float64(held) / float64(cost)
	t.Logf("one state: estimated %d bytes, %d on the heap (%.2f heap bytes per estimated byte)", cost, held, perByte)

	budget := cost + cost/5
	base = heapAfterGC()
	caches := NewCaches(budget)
	a := Open(dirStore{dirs[0]}, Options{Caches: caches})
	for v := int64(30); v < 40; v++ { // each built on the one before
		if _, err := a.Snapshot(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	b := Open(dirStore{dirs[1]}, Options{Caches: caches})
	if _, err := b.Snapshot(ctx, 39); err != nil {
		t.Fatal(err)
	}
	used, n := caches.states.Usage()
	live := heapAfterGC() - base
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	// The budget on the heap, with a margin for what the estimate misses
	// (the parsed commits' eighth holds actions the states share).
	limit := int64(perByte * float64(budget) * 1.15)
	t.Logf("budget %d: %d entries charged %d; %d bytes on the heap (limit %d)", budget, n, used, live, limit)
	if live > limit {
		t.Errorf("the cache holds %d bytes on the heap for a budget of %d (%d on the heap): the chain's shared state is charged to no entry", live, budget, limit)
	}
}

// An entry sharing bytes with its base is charged them once the base is
// gone, evicted or removed, and not before; a chain is charged link by
// link as its bases go.
func TestBudgetLRUSharedCharges(t *testing.T) {
	c := newBudgetLRU[string, int](1000, 10)
	c.Add("base", 0, 600)
	c.AddShared("s1", 1, 650, "base", 600) // charged 50 while base is cached
	c.AddShared("s2", 2, 700, "s1", 650)   // charged 50 while s1 is cached
	if used, n := c.Usage(); used != 700 || n != 3 {
		t.Fatalf("usage %d in %d entries, want 700 in 3", used, n)
	}
	c.Remove("base")
	if used, _ := c.Usage(); used != 700 { // s1 now 650, s2 50
		t.Fatalf("after the base went: usage %d, want 700", used)
	}
	c.Add("other", 3, 400) // over budget: s1 (oldest) goes, s2 is charged in full
	if _, ok := c.Peek("s1"); ok {
		t.Fatal("s1 kept over the budget")
	}
	if used, _ := c.Usage(); used > 1000 {
		t.Fatalf("usage %d over the budget of 1000 after evictions", used)
	}
	if _, ok := c.Peek("s2"); ok {
		if used, _ := c.Usage(); used != 400+700 {
			t.Fatalf("s2 kept without its full charge: usage %d", used)
		}
	}
	c.AddShared("lone", 4, 300, "missing", 300) // no base cached: charged in full
	if used, _ := c.Usage(); used < 700 {
		t.Fatalf("an entry whose base is not cached was charged less than its cost (usage %d)", used)
	}
}

// BenchmarkSegmentFarFromCheckpoint plans the segment of a version 10,000
// commits after the nearest checkpoint (version 0 has none either), in a
// listing of 20,000 commits with one checkpoint at the end.
func BenchmarkSegmentFarFromCheckpoint(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: dir, Commits: 20000, FilesPerCommit: 1}); err != nil {
		b.Fatal(err)
	}
	l, err := listLog(context.Background(), dirStore{dir}, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if seg, err := (&segmentPlanner{}).segment(10000, l); err != nil || seg.CheckpointVersion != -1 || len(seg.Commits) != 10001 {
			b.Fatal(err)
		}
	}
}
