package blobstore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/scalegen"
)

// countingRanges counts the ranged listings made through it.
type countingRanges struct {
	*Store
	ranges atomic.Int64
}

func (c *countingRanges) ListRange(ctx context.Context, dir, from, to string) ([]delta.ObjectInfo, error) {
	c.ranges.Add(1)
	return c.Store.ListRange(ctx, dir, from, to)
}

// A long log on an object store is listed in parallel ranges, and the
// result is the listing a single pass gives: every version, every time.
func TestParallelListingAgreesWithOnePass(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: dir, Commits: 4000, FilesPerCommit: 1, CheckpointEvery: 100, KeepCheckpoints: true, MaxLive: 50}); err != nil {
		t.Fatal(err)
	}
	st, err := Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "_delta_log"))
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, "_delta_log", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Put(ctx, "_delta_log/"+e.Name(), bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	ranged := &countingRanges{Store: st}
	par := delta.Open(ranged, delta.Options{})
	if _, err := par.Latest(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := par.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := delta.Open(sizedOnly{st}, delta.Options{}).Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4000 || !reflect.DeepEqual(times(got), times(want)) {
		t.Errorf("parallel listing: %d versions, one pass %d; equal times: %v", len(got), len(want), reflect.DeepEqual(times(got), times(want)))
	}
	if n := ranged.ranges.Load(); n < 4 {
		t.Errorf("%d ranged listings for 4,000 commits, want one per %d versions", n, 900)
	}
	// A range stops at its end.
	objs, err := st.ListRange(ctx, "_delta_log/", "00000000000000000100", "00000000000000000200")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 101 { // commits 100..199 and the checkpoint at 100
		t.Errorf("range [100, 200) holds %d objects, want 101", len(objs))
	}
}
