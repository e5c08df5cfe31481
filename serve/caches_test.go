package serve

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/blobcache"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// Two mounts in one process (two Caches) share nothing: what one table
// decides and keeps (verdicts, shapes, footer-only patches) is in its
// mount's caches only, one filling its verdicts to the bound evicts none
// of the other's, and Close frees one mount's caches and leaves the
// other's whole.
func TestCachesArePerMount(t *testing.T) {
	ctx := context.Background()
	ca, cb := NewCaches(), NewCaches()
	ta, snap := openFixture(t, "dat/basic_partitioned", Options{Caches: ca, PartitionsInFiles: true})
	tb, _ := openFixture(t, "dat/basic_partitioned", Options{Caches: cb, PartitionsInFiles: true})
	files, err := snap.LiveFiles()
	if err != nil || len(files) == 0 {
		t.Fatalf("%d live files, %v", len(files), err)
	}
	open := func(tbl *Table) {
		for i := range files {
			c, err := tbl.Open(ctx, snap, &files[i])
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			if _, err := tbl.Size(ctx, snap, &files[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	open(ta)
	ua := ca.Usage()
	if ua.Verdicts == 0 || ua.Patches == 0 || ua.Shapes == 0 {
		t.Fatalf("mount A after opening %d files: %+v; want verdicts, patches and a shape", len(files), ua)
	}
	if ub := cb.Usage(); ub != (CacheUsage{}) {
		t.Fatalf("mount B holds %+v after only mount A opened files", ub)
	}
	open(tb)
	ub := cb.Usage()
	if ub.Verdicts != ua.Verdicts || ub.Patches != ua.Patches {
		t.Fatalf("mount B after the same opens: %+v, mount A %+v", ub, ua)
	}
	// A full verdict cache is cleared: mount A's only.
	ca.verdicts.max = ca.verdicts.len()
	ca.verdicts.put(verdictID{1, 2}, servedAsStored)
	if n := ca.verdicts.len(); n != 1 {
		t.Fatalf("mount A's full verdict cache holds %d after one more, want 1 (cleared)", n)
	}
	if got := cb.Usage(); got != ub {
		t.Fatalf("mount A's eviction changed mount B's caches: %+v, was %+v", got, ub)
	}
	ta.Close()
	ca.Close()
	if got := ca.Usage(); got != (CacheUsage{}) {
		t.Errorf("mount A's caches hold %+v after Close", got)
	}
	if got := cb.Usage(); got != ub {
		t.Errorf("closing mount A changed mount B's caches: %+v, was %+v", got, ub)
	}
	// Mount B still serves from what it kept.
	for i := range files {
		if n, ok := tb.KnownSize(snap, files[i].Add); !ok || n <= 0 {
			t.Errorf("mount B lost the size of %s (%d, %v)", files[i].Key, n, ok)
		}
	}
}

// The per-unit costs the docs state hold on the heap: a verdict costs at
// most verdictBytes, an entry of the copies' bookkeeping (opens counted,
// copies checked) at most copyEntryBytes, whatever the keys' length.
func TestCacheUnitsCoverTheHeap(t *testing.T) {
	const n = 1 << 16
	base := testenv.LiveHeap()
	v := newVerdictCache(maxVerdicts)
	for i := range uint64(n) {
		v.put(verdictID{i, i * 7}, int64(i))
	}
	held := testenv.LiveHeap() - base
	t.Logf("%d verdicts: %d bytes of heap (%d each)", n, held, held/n)
	if held > n*verdictBytes {
		t.Errorf("%d verdicts hold %d bytes, over %d each", n, held, verdictBytes)
	}
	runtime.KeepAlive(v)

	base = testenv.LiveHeap()
	c := newCopyState()
	long := strings.Repeat("k", 300) // a copy key names the store, file, DV and shape
	for i := range n {
		key := fmt.Sprintf("%s|%d", long, i)
		c.opens.Add(hashOf(key), 1)
		c.trust(key, blobcache.FileIdentity{})
	}
	held = testenv.LiveHeap() - base
	t.Logf("%d files counted and checked: %d bytes of heap (%d each entry)", n, held, held/(2*n))
	if held > 2*n*copyEntryBytes {
		t.Errorf("%d copy entries hold %d bytes, over %d each", 2*n, held, copyEntryBytes)
	}
	runtime.KeepAlive(c)
}
