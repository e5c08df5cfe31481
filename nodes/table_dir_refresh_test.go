package nodes

import (
	"context"
	"testing"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// staleTable answers Latest with a fixed snapshot, as a Latest call that
// listed the log before a concurrent commit landed and returned after it.
type staleTable struct {
	Table
	latest *delta.Snapshot
}

func (s *staleTable) Latest(context.Context) (*delta.Snapshot, error) { return s.latest, nil }

// basicAppend returns the table of the basic_append fixture and its
// versions 0 and 1.
func basicAppend(t *testing.T) (real Table, v0, v1 *delta.Snapshot) {
	t.Helper()
	ctx := context.Background()
	st, err := blobstore.Open(ctx, testenv.Fixture(t, "dat/basic_append"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	real = delta.Open(st, delta.Options{})
	if v0, err = real.Snapshot(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if v1, err = real.Snapshot(ctx, 1); err != nil {
		t.Fatal(err)
	}
	return real, v0, v1
}

// TestRefreshNeverMovesLatestBack: two refreshes can overlap (the refresh
// loop and an inbox commit's); the one that read an older version and
// finished last must not move @latest back from the commit's version.
func TestRefreshNeverMovesLatestBack(t *testing.T) {
	ctx := context.Background()
	real, v0, v1 := basicAppend(t)
	tbl := &staleTable{Table: real, latest: v1}
	d := NewTableDir(NewEnv(Options{}), "t", tbl, nil)
	if changed, err := d.Refresh(ctx); err != nil || !changed {
		t.Fatalf("first refresh: changed %v, err %v; want true, nil", changed, err)
	}
	tbl.latest = v0 // the slow, stale refresh ends now
	changed, err := d.Refresh(ctx)
	if err != nil || changed {
		t.Errorf("stale refresh: changed %v, err %v; want false, nil", changed, err)
	}
	if v, ok := d.Version(); !ok || v != 1 {
		t.Errorf("after a stale refresh, Version() = %d, %v; want 1, true", v, ok)
	}
}

// preparingFiles records the snapshots Prepare was given.
type preparingFiles struct {
	Files
	prepared []int64
}

func (p *preparingFiles) Prepare(snap *delta.Snapshot) {
	p.prepared = append(p.prepared, snap.Version())
}

// TestRefreshPreparesNewVersions: a refresh that finds a new newest version
// hints it to the table's Files (which makes ready what every first stat
// needs); one that finds the same version, or an older one, does not.
func TestRefreshPreparesNewVersions(t *testing.T) {
	ctx := context.Background()
	real, v0, v1 := basicAppend(t)
	tbl := &staleTable{Table: real, latest: v0}
	files := &preparingFiles{}
	d := NewTableDir(NewEnv(Options{}), "t", tbl, files)
	for _, s := range []*delta.Snapshot{v0, v0, v1, v0, v1} {
		tbl.latest = s
		if _, err := d.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(files.prepared) != 2 || files.prepared[0] != 0 || files.prepared[1] != 1 {
		t.Errorf("Prepare was given versions %v; want [0 1]", files.prepared)
	}
}
