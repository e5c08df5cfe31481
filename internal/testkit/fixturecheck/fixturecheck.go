// Package fixturecheck checks a delta.Table built over a copy of one of the
// shared fixture tables against the facts the fixtures record: its latest
// version, live files and live rows (FIXTURE.json), the row count of every
// expected/vN, and that every listed version builds. The engine's
// conformance test runs it on local tables and the object-store tests on
// the same tables uploaded to S3, GCS and Azure. Only tests import it.
package fixturecheck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// Table checks tbl against fixture name. snap is tbl's latest snapshot.
// With rows false, live row counts are not compared (tables whose deletion
// vectors cannot be loaded; see the engine's conformance test).
func Table(t *testing.T, tbl *delta.Table, snap *delta.Snapshot, name string) {
	t.Helper()
	ctx := context.Background()
	facts := testenv.LoadFixtureJSON(t, name)
	if want := int64(Num(facts["latest_version"])); snap.Version() != want {
		t.Errorf("latest version %d, want %d", snap.Version(), want)
	}
	if want := int(Num(facts["live_files"])); len(snap.Files()) != want {
		t.Errorf("live files %d, want %d", len(snap.Files()), want)
	}
	if want, ok := facts["live_rows_footer_minus_dv"].(float64); ok && Num(facts["live_files_missing_on_disk"]) <= 0 {
		if got, err := LiveRows(ctx, snap); err != nil || got != int64(want) {
			t.Errorf("live rows %d (%v), want %d", got, err, int64(want))
		}
	}
	root := testenv.FixtureRoot(t, name)
	for _, fx := range testenv.Index(t) {
		if fx.Name != name {
			continue
		}
		for _, ev := range fx.ExpectedVersions {
			if ev != "text" {
				Expected(t, tbl, root, ev)
			}
		}
	}
	AllVersions(t, tbl)
}

// LiveRows sums physical rows minus deleted rows over the live files,
// loading every deletion vector (which checks its cardinality).
func LiveRows(ctx context.Context, snap *delta.Snapshot) (int64, error) {
	var total int64
	for _, a := range snap.Files() {
		n, err := snap.NumRecords(ctx, a)
		if err != nil {
			return 0, fmt.Errorf("version %d: numRecords of %s: %w", snap.Version(), a.Path, err)
		}
		dv, err := snap.DeletedRows(ctx, a)
		if err != nil {
			return 0, err
		}
		total += n - int64(dv.GetCardinality())
	}
	return total, nil
}

// Expected compares the live rows of version ev ("latest" or "vN") with
// the rows of the fixture's expected/<ev> Parquet files.
func Expected(t *testing.T, tbl *delta.Table, fixtureRoot, ev string) {
	t.Helper()
	want := ParquetRows(t, filepath.Join(fixtureRoot, "expected", ev))
	version := int64(-1)
	if ev != "latest" {
		v, err := strconv.ParseInt(strings.TrimPrefix(ev, "v"), 10, 64)
		if err != nil {
			t.Fatalf("expected dir %q", ev)
		}
		version = v
	}
	snap, err := tbl.Snapshot(context.Background(), version)
	if err != nil {
		t.Fatalf("%s: %v", ev, err)
	}
	if got, err := LiveRows(context.Background(), snap); err != nil || got != want {
		t.Errorf("%s: live rows %d (%v), expected/%s has %d", ev, got, err, ev, want)
	}
}

// AllVersions builds every version the log lists.
func AllVersions(t *testing.T, tbl *delta.Table) {
	t.Helper()
	ctx := context.Background()
	vs, err := tbl.Versions(ctx)
	if err != nil {
		t.Fatalf("versions: %v", err)
	}
	for _, v := range vs {
		if s, err := tbl.Snapshot(ctx, v.Version); err != nil {
			t.Errorf("version %d: %v", v.Version, err)
		} else if s.Version() != v.Version {
			t.Errorf("asked for version %d, got %d", v.Version, s.Version())
		}
	}
}

// ParquetRows counts the rows of every Parquet file under dir.
func ParquetRows(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		pf, err := parquet.OpenFile(f, fi.Size())
		if err != nil {
			return err
		}
		total += pf.NumRows()
		return nil
	})
	if err != nil {
		t.Fatalf("count expected rows in %s: %v", dir, err)
	}
	return total
}

// Num converts a FIXTURE.json number (float64) or a decimal string to
// float64, -1 for anything else.
func Num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return -1
		}
		return f
	}
	return -1
}
