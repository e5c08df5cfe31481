package delta

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/scalegen"
)

// changeCounts is what one version's changes hold: rows by change type,
// and the number of CDC files (whose rows this package does not read).
type changeCounts struct {
	rows map[string]uint64
	cdc  int
}

// versionChanges returns each version's changes of from..to: the rows of
// each change type (the resolved selections counted against rows, the
// file's row count), and the CDC files.
func versionChanges(t *testing.T, tbl *Table, from, to int64, rows uint64) map[int64]changeCounts {
	t.Helper()
	ctx := context.Background()
	out := map[int64]changeCounts{}
	err := tbl.Changes(ctx, from, to, func(f ChangeFile) error {
		c := out[f.Version]
		if c.rows == nil {
			c.rows = map[string]uint64{}
		}
		if f.ChangeType == "" {
			c.cdc++
			out[f.Version] = c
			return nil
		}
		keep, drop, err := tbl.Rows(ctx, f)
		if err != nil {
			return err
		}
		switch {
		case keep != nil:
			c.rows[f.ChangeType] += keep.GetCardinality()
		case drop != nil:
			c.rows[f.ChangeType] += rows - drop.GetCardinality()
		default:
			c.rows[f.ChangeType] += rows
		}
		out[f.Version] = c
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The deletion vector pairs of cdf-table-with-dv resolve to the rows
// delta-kernel-rs's cdf_with_deletion_vector expects (kernel/tests/
// integration/features/cdf.rs: insert 0..9; remove 0, 9; restore them;
// remove 0, 1, 4, 5; restore 1, 4; restore 0, 5 and remove 3; restore 3).
func TestChangesResolveDeletionVectorPairs(t *testing.T) {
	tbl := Open(dirStore{fixtureTable(t, "delta-kernel-rs/cdf-table-with-dv")}, Options{})
	got := versionChanges(t, tbl, 0, 6, 10)
	want := []map[string]uint64{
		{ChangeInsert: 10},
		{ChangeDelete: 2},
		{ChangeInsert: 2},
		{ChangeDelete: 4},
		{ChangeInsert: 2},
		{ChangeInsert: 2, ChangeDelete: 1},
		{ChangeInsert: 1},
	}
	for v, w := range want {
		g := got[int64(v)].rows
		for typ, n := range w {
			if g[typ] != n {
				t.Errorf("v%d: %d %s rows, want %d (all: %v)", v, g[typ], typ, n, g)
			}
		}
		for typ, n := range g {
			if w[typ] == 0 && n != 0 {
				t.Errorf("v%d: %d %s rows, want none", v, n, typ)
			}
		}
	}
}

// A version with cdc actions gives its CDC files only (cdf-table's
// updates), one without gives its adds and removes.
func TestChangesUseCDCFilesWhenACommitHasThem(t *testing.T) {
	tbl := Open(dirStore{fixtureTable(t, "delta-kernel-rs/cdf-table")}, Options{})
	got := map[int64][]ChangeFile{}
	err := tbl.Changes(context.Background(), 0, 3, func(f ChangeFile) error {
		got[f.Version] = append(got[f.Version], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for v := int64(0); v <= 3; v++ {
		if len(got[v]) == 0 {
			t.Fatalf("v%d: no change files", v)
		}
		for _, f := range got[v] {
			if v == 0 && f.ChangeType != ChangeInsert || v > 0 && f.ChangeType != "" {
				t.Errorf("v%d: %s has change type %q", v, f.Path, f.ChangeType)
			}
			if f.Timestamp.IsZero() || f.Size <= 0 {
				t.Errorf("v%d: %s: timestamp %v size %d", v, f.Path, f.Timestamp, f.Size)
			}
		}
	}
}

// A table without the change data feed gives no changes, and says why.
func TestChangesRefusedWithoutTheFeed(t *testing.T) {
	tbl := Open(dirStore{fixtureTable(t, "dat/basic_append")}, Options{})
	called := false
	err := tbl.Changes(context.Background(), 0, 1, func(ChangeFile) error { called = true; return nil })
	if !errors.Is(err, ErrChangesUnavailable) || called {
		t.Fatalf("changes of a table without the feed: %v (fn called: %v), want ErrChangesUnavailable and nothing given", err, called)
	}
	t.Log(err)
}

// The ranges kernel-rs's table_changes_checks_enable_cdf_flag accepts on
// table-with-cdf (the feed on at versions 0-1, off at 2, on again at 3)
// are planned, the others refused (table_changes/mod.rs).
func TestChangesFollowTheFeedFlag(t *testing.T) {
	tbl := Open(dirStore{fixtureTable(t, "delta-kernel-rs/table-with-cdf")}, Options{})
	for _, r := range [][2]int64{{0, 1}, {0, 0}, {1, 1}, {0, 2}, {1, 2}, {2, 2}, {2, 3}, {3, 4}} {
		n := 0
		err := tbl.Changes(context.Background(), r[0], r[1], func(ChangeFile) error { n++; return nil })
		if ok := r[1] < 2; ok != (err == nil) || ok != (n > 0) {
			t.Errorf("changes %d..%d: %d files, %v; want them %v", r[0], r[1], n, err, map[bool]string{true: "given", false: "refused"}[ok])
		}
		if err != nil && !errors.Is(err, ErrChangesUnavailable) {
			t.Errorf("changes %d..%d: %v, want ErrChangesUnavailable", r[0], r[1], err)
		}
	}
}

// The start of a range named by time is the first version committed at
// or after it; a time before the first commit starts at the first.
func TestVersionAtOrAfter(t *testing.T) {
	root := filepath.Join(t.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: root, Commits: 20, FilesPerCommit: 1, CheckpointEvery: 10, ICT: true}); err != nil {
		t.Fatal(err)
	}
	tbl := Open(dirStore{root}, Options{})
	for _, c := range []struct {
		ts   time.Time
		want int64
	}{
		{scalegen.CommitTime(5), 5},
		{scalegen.CommitTime(5).Add(time.Millisecond), 6},
		{scalegen.CommitTime(0).Add(-time.Hour), 0},
		{scalegen.CommitTime(19).Add(time.Millisecond), 20},
	} {
		got, err := tbl.VersionAtOrAfter(context.Background(), c.ts)
		if err != nil || got != c.want {
			t.Errorf("VersionAtOrAfter(%v): %d, %v; want %d", c.ts, got, err, c.want)
		}
	}
}
