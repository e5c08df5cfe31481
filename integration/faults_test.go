package integration

// Fault injection over every fixture: the engine and the block cache read
// through internal/testkit/faultstore, which fails requests, times them out, cuts
// bodies short and serves stale listings at random. Whatever they return
// must be exactly what a clean read returns; failures are allowed while
// faults last, and once faults stop everything must read again (no cache
// keeps a failed or partial result).

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/faultstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// faultRates is the mix of faults of the fault tests.
var faultRates = faultstore.Rates{Error: 0.1, Timeout: 0.05, ShortRead: 0.1, Truncate: 0.05, StaleList: 0.2}

// faultTally counts what the fault tests saw, over all fixtures.
type faultTally struct {
	tables, refused, snapshotsOK, snapshotsFailed   int
	filesRead, chunksOK, chunksFailed, skippedFiles int
	faults                                          int64
}

func TestFaultsAllFixtures(t *testing.T) {
	runFaults(t, 1, 1)
}

// runFaults runs the fault test over all fixtures with seeds first..first+n-1.
func runFaults(t *testing.T, first, n uint64) {
	index := testenv.Index(t)
	cache, err := blobcache.New(blobcache.Options{BlockSize: 64 << 10, MemoryBytes: 16 << 20, ReadAhead: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	var tally faultTally
	for seed := first; seed < first+n; seed++ {
		for _, fx := range index {
			if fx.LatestVersion < 0 {
				continue
			}
			t.Run(fmt.Sprintf("%s/seed%d", fx.Name, seed), func(t *testing.T) {
				faultFixture(t, fx.Name, seed, cache, &tally)
			})
		}
	}
	t.Logf("fault tally: %+v", tally)
	if tally.faults == 0 || tally.snapshotsOK == 0 || tally.chunksOK == 0 || tally.chunksFailed == 0 || tally.snapshotsFailed == 0 {
		t.Errorf("the faults did not bite or nothing succeeded: %+v", tally)
	}
}

// faultFixture checks one fixture under faults with one seed.
func faultFixture(t *testing.T, name string, seed uint64, cache *blobcache.Cache, tally *faultTally) {
	ctx := context.Background()
	root := testenv.Fixture(t, name)
	store, err := blobstore.Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	clean := delta.Open(store, delta.Options{})
	ref, err := clean.Latest(ctx)
	if err != nil {
		tally.refused++
		return // a refused table: the mount tests check its reason
	}
	tally.tables++
	faulty := faultstore.New(store, seed, faultRates)
	table := delta.Open(faulty, delta.Options{})
	rng := rand.New(rand.NewPCG(seed, 99))
	for range 6 {
		checkFaultySnapshot(t, ctx, table, clean, ref.Version(), rng, tally)
	}
	readDataUnderFaults(t, ctx, store.String(), root, ref, faulty, cache, rng, tally)
	tally.faults += faulty.Counts().Faults()

	faulty.SetEnabled(false)
	again, err := table.Latest(ctx)
	if err != nil {
		t.Fatalf("after faults stopped, latest: %v", err)
	}
	if again.Version() != ref.Version() || !slices.Equal(snapshotFacts(t, again), snapshotFacts(t, ref)) {
		t.Fatalf("after faults stopped, latest is v%d with other files than the clean v%d", again.Version(), ref.Version())
	}
}

// checkFaultySnapshot builds the latest or a random version through the
// faulty table: a snapshot returned must equal the clean one of its version.
func checkFaultySnapshot(t *testing.T, ctx context.Context, table, clean *delta.Table, latest int64, rng *rand.Rand, tally *faultTally) {
	t.Helper()
	var snap *delta.Snapshot
	var err error
	if rng.IntN(2) == 0 {
		snap, err = table.Latest(ctx)
	} else {
		snap, err = table.Snapshot(ctx, rng.Int64N(latest+1))
	}
	if err != nil {
		tally.snapshotsFailed++
		return
	}
	want, err := clean.Snapshot(ctx, snap.Version())
	if err != nil {
		t.Fatalf("faulty read built v%d, which a clean read refuses: %v", snap.Version(), err)
	}
	if got, exp := snapshotFacts(t, snap), snapshotFacts(t, want); !slices.Equal(got, exp) {
		t.Fatalf("v%d under faults differs from the clean read:\n got %q\nwant %q", snap.Version(), got, exp)
	}
	for _, a := range snap.Files() {
		if a.DeletionVector == nil {
			continue
		}
		bm, err := snap.DeletedRows(ctx, a)
		if err != nil {
			continue
		}
		wbm, err := want.DeletedRows(ctx, a)
		if err != nil || !bm.Equals(wbm) {
			t.Fatalf("v%d %s: deletion vector under faults differs from the clean read (%v)", snap.Version(), a.Path, err)
		}
	}
	tally.snapshotsOK++
}

// snapshotFacts lists what a snapshot serves: each live file with its
// size, DV and record count, and the schema.
func snapshotFacts(t *testing.T, s *delta.Snapshot) []string {
	t.Helper()
	var out []string
	for _, a := range s.Files() {
		n, _ := a.NumRecords()
		out = append(out, fmt.Sprintf("%s size=%d dv=%s n=%d", a.Path, a.Size, a.DeletionVector.UniqueID(), n))
	}
	slices.Sort(out)
	return append(out, "schema="+s.Metadata().SchemaString)
}

// readDataUnderFaults reads every live file whose bytes are present through
// the block cache in random chunks while faults last (each chunk returned
// must be exact), then again with faults off (all must be exact). The
// cache versions carry prefix (the store's name): keys repeat across tables.
func readDataUnderFaults(t *testing.T, ctx context.Context, prefix, root string, ref *delta.Snapshot, faulty *faultstore.Store, cache *blobcache.Cache, rng *rand.Rand, tally *faultTally) {
	t.Helper()
	files, err := ref.LiveFiles()
	if err != nil {
		return
	}
	for _, f := range files {
		want, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Key)))
		if err != nil || int64(len(want)) != f.Add.Size {
			tally.skippedFiles++ // missing upstream, or sized unlike the log (fail-closed tests)
			continue
		}
		obj := cache.Object(faulty, f.Key, f.Add.Size, prefix+"@"+fmt.Sprint(f.Add.ModificationTime))
		for off := int64(0); off < f.Add.Size; {
			n := 1 + rng.Int64N(min(f.Add.Size-off, 200<<10))
			p := make([]byte, n)
			got, err := obj.ReadAt(ctx, p, off)
			switch {
			case err != nil:
				tally.chunksFailed++
			case int64(got) != n || !bytes.Equal(p, want[off:off+n]):
				t.Fatalf("%s [%d,%d): under faults, read %d bytes that differ from the file", f.Key, off, off+n, got)
			default:
				tally.chunksOK++
			}
			off += n
		}
		tally.filesRead++
	}
	faulty.SetEnabled(false)
	defer faulty.SetEnabled(true)
	for _, f := range files {
		want, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Key)))
		if err != nil || int64(len(want)) != f.Add.Size {
			continue
		}
		obj := cache.Object(faulty, f.Key, f.Add.Size, prefix+"@"+fmt.Sprint(f.Add.ModificationTime))
		got := make([]byte, f.Add.Size)
		if n, err := obj.ReadAt(ctx, got, 0); err != nil || int64(n) != f.Add.Size || !bytes.Equal(got, want) {
			t.Fatalf("%s: after faults stopped, read %d bytes (%v), equal=%v", f.Key, n, err, bytes.Equal(got, want))
		}
	}
}
