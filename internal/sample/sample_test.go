package sample

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
)

// generate creates the sample in a temp dir and returns the table's store.
func generate(t *testing.T) dirStore {
	t.Helper()
	dir := t.TempDir()
	if err := Generate(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	return dirStore{root: filepath.Join(dir, Table)}
}

// readRows reads a data file of the table with parquet-go.
func readRows(t *testing.T, s dirStore, a *delta.Add) []orderRow {
	t.Helper()
	key, err := delta.ResolvePath(s.root, a.Path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.ReadFile[orderRow](s.path(key))
	if err != nil {
		t.Fatalf("read %s: %v", a.Path, err)
	}
	return rows
}

func TestGenerateVersionsAndRows(t *testing.T) {
	ctx := context.Background()
	s := generate(t)
	tbl := delta.Open(s, delta.Options{})
	want := []int64{0, 80, 150, 200, 160, 200, 260} // computed by hand from the plan
	for v, rows := range want {
		if got := LiveRows(int64(v)); got != rows {
			t.Errorf("LiveRows(%d) = %d, want %d", v, got, rows)
		}
		snap, err := tbl.Snapshot(ctx, int64(v))
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		var live int64
		for _, a := range snap.Files() {
			n, ok := a.NumRecords()
			if !ok {
				t.Fatalf("v%d: %s has no numRecords", v, a.Path)
			}
			if a.DeletionVector != nil {
				n -= a.DeletionVector.Cardinality
			}
			live += n
		}
		if live != rows {
			t.Errorf("version %d: %d live rows from the log, want %d", v, live, rows)
		}
	}
	if got := LiveRows(LatestVersion + 1); got != -1 {
		t.Errorf("LiveRows past the latest version = %d, want -1", got)
	}
}

// TestGenerateDeletionVectors reads every live file at the latest version
// and applies its DV: exactly the DeletedCustomer orders written before
// the DELETE are gone, and stats match the files.
func TestGenerateDeletionVectors(t *testing.T) {
	ctx := context.Background()
	s := generate(t)
	snap, err := delta.Open(s, delta.Options{}).Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var live, deletedSeen, dvFiles int64
	for _, a := range snap.Files() {
		rows := readRows(t, s, a)
		if n, _ := a.NumRecords(); n != int64(len(rows)) {
			t.Errorf("%s: numRecords %d, file has %d rows", a.Path, n, len(rows))
		}
		dv, err := snap.DeletedRows(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if !dv.IsEmpty() {
			dvFiles++
		}
		for i, r := range rows {
			switch {
			case dv.Contains(uint64(i)):
				if *r.Customer != DeletedCustomer {
					t.Errorf("%s row %d (%s) deleted by the DV", a.Path, i, *r.Customer)
				}
				deletedSeen++
			case *r.Customer == DeletedCustomer && *r.OrderID <= 200:
				t.Errorf("%s row %d: order %d of %s survived the DELETE", a.Path, i, *r.OrderID, DeletedCustomer)
			default:
				live++
			}
		}
	}
	if live != LiveRows(LatestVersion) || deletedSeen != 40 || dvFiles != 5 {
		t.Errorf("%d live rows, %d deleted in %d files; want %d, 40 in 5", live, deletedSeen, dvFiles, LiveRows(LatestVersion))
	}
}

// TestGenerateCheckpointIsUsed removes the commits before the checkpoint:
// the versions from the checkpoint on still build, older ones are gone.
func TestGenerateCheckpointIsUsed(t *testing.T) {
	ctx := context.Background()
	s := generate(t)
	data, err := os.ReadFile(s.path(delta.LastCheckpointKey))
	if err != nil || !bytes.Contains(data, []byte(`"version":5`)) {
		t.Fatalf("_last_checkpoint %s (%v), want version 5", data, err)
	}
	for v := int64(0); v < CheckpointVersion; v++ {
		if err := os.Remove(s.path(delta.CommitKey(v))); err != nil {
			t.Fatal(err)
		}
	}
	tbl := delta.Open(s, delta.Options{})
	for v := CheckpointVersion; v <= LatestVersion; v++ {
		snap, err := tbl.Snapshot(ctx, v)
		if err != nil {
			t.Fatalf("version %d without the early commits: %v", v, err)
		}
		dvs := 0
		for _, a := range snap.Files() {
			if a.DeletionVector != nil {
				dvs++
			}
		}
		if dvs != 5 {
			t.Errorf("version %d: %d files with a DV, want 5", v, dvs)
		}
	}
	if _, err := tbl.Snapshot(ctx, CheckpointVersion-1); !errors.Is(err, delta.ErrVersionNotFound) {
		t.Errorf("version %d after removing its commit: %v, want ErrVersionNotFound", CheckpointVersion-1, err)
	}
}

func TestGenerateTimeTravel(t *testing.T) {
	ctx := context.Background()
	tbl := delta.Open(generate(t), delta.Options{})
	for v := int64(0); v <= LatestVersion; v++ {
		got, err := tbl.VersionAt(ctx, CommitTime(v).Add(time.Hour))
		if err != nil || got != v {
			t.Errorf("VersionAt(commit time of v%d + 1h) = %d, %v", v, got, err)
		}
	}
	spec, err := delta.ParseSpec("2025-03-04")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.SnapshotAt(ctx, spec)
	if err != nil || snap.Version() != 2 {
		t.Errorf("@2025-03-04: %v, %v; want version 2 (committed 2025-03-03 10:00)", snap, err)
	}
}

func TestGenerateIsDeterministicAndRefusesExisting(t *testing.T) {
	a, b := generate(t), generate(t)
	files := map[string][]byte{}
	err := filepath.WalkDir(a.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(a.root, p)
		files[rel], err = os.ReadFile(p)
		return err
	})
	if err != nil || len(files) < 15 {
		t.Fatalf("%d files (%v)", len(files), err)
	}
	for rel, data := range files {
		other, err := os.ReadFile(filepath.Join(b.root, rel))
		if err != nil || !bytes.Equal(data, other) {
			t.Errorf("%s differs between two runs (%v)", rel, err)
		}
	}
	err = Generate(context.Background(), filepath.Dir(a.root))
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("Generate over an existing sample: %v, want fs.ErrExist", err)
	}
}

// The sample has the change data feed on: the DELETE's changes are the
// 40 rows its deletion vectors removed, each a delete of DeletedCustomer.
func TestGenerateChangeFeed(t *testing.T) {
	ctx := context.Background()
	s := generate(t)
	table := delta.Open(s, delta.Options{})
	deleted := 0
	err := table.Changes(ctx, DeleteVersion, DeleteVersion, func(cf delta.ChangeFile) error {
		if cf.Pair == nil {
			t.Errorf("%s: a %s change without a DV pair", cf.Path, cf.ChangeType)
			return nil
		}
		keep, _, err := table.Rows(ctx, cf)
		if err != nil {
			return err
		}
		if cf.ChangeType != "delete" { // rows restored: none
			if !keep.IsEmpty() {
				t.Errorf("%s: %d rows of change type %q", cf.Path, keep.GetCardinality(), cf.ChangeType)
			}
			return nil
		}
		rows := readRows(t, s, &delta.Add{Path: cf.Path})
		for it := keep.Iterator(); it.HasNext(); {
			if r := rows[it.Next()]; *r.Customer != DeletedCustomer {
				t.Errorf("%s: a change of %s", cf.Path, *r.Customer)
			}
			deleted++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if deleted != 40 {
		t.Errorf("%d rows deleted at version %d, want 40", deleted, DeleteVersion)
	}
}
