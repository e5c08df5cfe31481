package delta_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testenv"
)

// mustRefuse lists the fixtures a correct reader refuses (see the
// fixtures' README), with the error each refusal must wrap.
var mustRefuse = map[string]error{
	"delta-rs/simple_table_features":                                        delta.ErrUnsupportedFeature, // reader feature blahabl
	"delta-kernel-rs/golden-deltalog-invalid-protocol-version":              delta.ErrUnsupportedFeature,
	"delta-kernel-rs/golden-no-delta-log-folder":                            delta.ErrNotATable,
	"delta-kernel-rs/crc-malformed":                                         delta.ErrCorruptLog, // a log with only a .crc
	"delta-kernel-rs/uc-catalog_managed_0":                                  delta.ErrUnsupportedFeature,
	"delta/bench-basic_catalog_managed":                                     delta.ErrUnsupportedFeature,
	"delta/kernel-catalog-owned-preview":                                    delta.ErrUnsupportedFeature,
	"delta-rs/data_err_logs_table_d":                                        delta.ErrUnsupportedFeature, // catalogOwned
	"delta-rs/data_err_logs_table_e":                                        delta.ErrUnsupportedFeature,
	"delta-rs/data_err_logs_table_f":                                        delta.ErrUnsupportedFeature,
	"delta-rs/data_err_logs_table_h":                                        delta.ErrUnsupportedFeature,
	"delta-rs/data_err_logs_table_i":                                        delta.ErrUnsupportedFeature,
	"delta-kernel-rs/table-with-geo":                                        delta.ErrUnsupportedFeature, // geospatial
	"delta-kernel-rs/golden-versions-not-contiguous":                        delta.ErrCorruptLog,         // commit 1 missing
	"delta-kernel-rs/golden-deltalog-state-reconstruction-without-protocol": delta.ErrCorruptLog,
	"delta-kernel-rs/golden-deltalog-state-reconstruction-without-metadata": delta.ErrCorruptLog,
	"delta-kernel-rs/golden-data-reader-absolute-paths-escaped-chars":       delta.ErrCorruptLog, // no metaData
	"delta-rs/data_err_logs_table_c":                                        delta.ErrCorruptLog, // commit 12 missing after checkpoint 10
}

// dvOutsideProtocolPath lists Spark tables written in Spark's test mode: their
// deletion vector files carry a test-only name prefix ("test%dv%prefix-") or
// an unsubstituted "{{FOLDER}}" placeholder, so they are not where the
// protocol says. A reader must fail to load those vectors (never serve the
// rows as if nothing were deleted); everything else about the tables reads.
var dvOutsideProtocolPath = map[string]error{
	"delta/spark-table-with-dv-small":             delta.ErrNotExist,
	"delta/spark-table-with-dv-large":             delta.ErrNotExist,
	"delta/spark-partitioned-table-with-dv-large": delta.ErrNotExist,
	"delta/spark-table-with-dv-special-char":      delta.ErrUnsupportedFeature, // p path outside the table
}

// TestConformance walks every fixture table: its latest snapshot must match
// FIXTURE.json (version, live files, live rows), every version with expected
// content must have the expected number of rows, and every reconstructable
// version must build. Tables a reader must refuse must fail with the right
// kind of error.
func TestConformance(t *testing.T) {
	idx := testenv.Index(t)
	var passed atomic.Int64
	t.Run("tables", func(t *testing.T) {
		for _, fx := range idx {
			t.Run(fx.Name, func(t *testing.T) {
				t.Parallel()
				checkFixture(t, fx)
				if !t.Failed() {
					passed.Add(1)
				}
			})
		}
	})
	t.Logf("conformance: %d of %d fixture tables pass", passed.Load(), len(idx))
}

func checkFixture(t *testing.T, fx testenv.FixtureInfo) {
	ctx := context.Background()
	dir := testenv.Fixture(t, fx.Name)
	st, err := blobstore.Open(ctx, dir)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer st.Close()
	tbl := delta.Open(st, delta.Options{})
	snap, err := tbl.Latest(ctx)
	if want, refuse := mustRefuse[fx.Name]; refuse {
		if !errors.Is(err, want) {
			t.Fatalf("latest: got %v, want an error wrapping %q", err, want)
		}
		if !strings.Contains(err.Error(), dir) && !strings.Contains(err.Error(), "Delta table") {
			t.Errorf("error %q does not name the table", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("latest: %v", err)
	}
	facts := testenv.LoadFixtureJSON(t, fx.Name)
	if want, ok := dvOutsideProtocolPath[fx.Name]; ok {
		if _, err := liveRows(ctx, snap); !errors.Is(err, want) {
			t.Fatalf("loading deletion vectors: got %v, want an error wrapping %q", err, want)
		}
		if want := int(num(facts["live_files"])); len(snap.Files()) != want {
			t.Errorf("live files %d, want %d", len(snap.Files()), want)
		}
		return
	}
	checkLatest(t, ctx, snap, facts)
	for _, ev := range fx.ExpectedVersions {
		checkExpected(t, ctx, tbl, filepath.Dir(dir), ev)
	}
	checkAllVersions(t, ctx, tbl)
}

func checkLatest(t *testing.T, ctx context.Context, snap *delta.Snapshot, facts map[string]any) {
	if want := int64(num(facts["latest_version"])); snap.Version() != want {
		t.Errorf("latest version %d, want %d", snap.Version(), want)
	}
	if want := int(num(facts["live_files"])); len(snap.Files()) != want {
		t.Errorf("live files %d, want %d", len(snap.Files()), want)
	}
	wantRows, ok := facts["live_rows_footer_minus_dv"].(float64)
	if !ok || num(facts["live_files_missing_on_disk"]) > 0 {
		return
	}
	if got, err := liveRows(ctx, snap); err != nil {
		t.Fatal(err)
	} else if got != int64(wantRows) {
		t.Errorf("live rows %d, want %d", got, int64(wantRows))
	}
}

// liveRows sums physical rows minus deleted rows, loading every deletion
// vector so that its cardinality is checked against the descriptor.
func liveRows(ctx context.Context, snap *delta.Snapshot) (int64, error) {
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

// checkExpected compares the live row count of a version with the rows of
// the fixture's expected/<v> Parquet files.
func checkExpected(t *testing.T, ctx context.Context, tbl *delta.Table, fixtureDir, ev string) {
	if ev == "text" {
		return
	}
	want := countParquetRows(t, filepath.Join(fixtureDir, "expected", ev))
	version := int64(-1)
	if ev != "latest" {
		version = int64(num(strings.TrimPrefix(ev, "v")))
	}
	snap, err := tbl.Snapshot(ctx, version)
	if err != nil {
		t.Fatalf("%s: %v", ev, err)
	}
	if got, err := liveRows(ctx, snap); err != nil {
		t.Fatalf("%s: %v", ev, err)
	} else if got != want {
		t.Errorf("%s: live rows %d, expected/%s has %d", ev, got, ev, want)
	}
}

func checkAllVersions(t *testing.T, ctx context.Context, tbl *delta.Table) {
	vs, err := tbl.Versions(ctx)
	if err != nil {
		t.Fatalf("versions: %v", err)
	}
	for _, v := range vs {
		s, err := tbl.Snapshot(ctx, v.Version)
		if err != nil {
			t.Errorf("version %d: %v", v.Version, err)
			continue
		}
		if s.Version() != v.Version {
			t.Errorf("asked for version %d, got %d", v.Version, s.Version())
		}
	}
}

func countParquetRows(t *testing.T, dir string) int64 {
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
		fi, _ := f.Stat()
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

// num converts a JSON number (float64) or a decimal string to float64.
func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case string:
		var f float64
		for _, c := range x {
			if c < '0' || c > '9' {
				return -1
			}
			f = f*10 + float64(c-'0')
		}
		return f
	}
	return -1
}
