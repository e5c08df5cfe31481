package delta_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/fixturecheck"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
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
	"delta-kernel-rs/golden-versions-not-contiguous":                        delta.ErrCorruptLog, // commit 1 missing
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
	if want, ok := dvOutsideProtocolPath[fx.Name]; ok {
		if _, err := fixturecheck.LiveRows(ctx, snap); !errors.Is(err, want) {
			t.Fatalf("loading deletion vectors: got %v, want an error wrapping %q", err, want)
		}
		facts := testenv.LoadFixtureJSON(t, fx.Name)
		if want := int(fixturecheck.Num(facts["live_files"])); len(snap.Files()) != want {
			t.Errorf("live files %d, want %d", len(snap.Files()), want)
		}
		return
	}
	fixturecheck.Table(t, tbl, snap, fx.Name)
}
