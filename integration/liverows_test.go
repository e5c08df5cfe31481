package integration

// Tables without expected Parquet content, checked through the mount
// against independently computed row counts and the stored files' rows:
// they cover what the expected-content fixtures of TestMountConformance do
// not (inline DVs, V2 checkpoints with sidecars, DVs over time).

import (
	"fmt"
	"maps"
	"math"
	"math/big"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// liveRowTables are fixtures without expected Parquet content that cover
// what the expected ones do not. Each listed snapshot must hold the given
// number of rows (nil: @latest with FIXTURE.json's live files and live
// rows, footer rows minus DV cardinalities, computed independently of
// deltafs), and every served file must hold an in-order subset of the rows
// of the stored file of that name.
//
// Left out, because no reader following the protocol can serve them (the
// mount fails their DV'd files with EIO, as it must):
// delta/spark-table-with-dv-small and delta/spark-partitioned-table-with-dv-large
// (DV files written with Spark's test-only "test%dv%prefix-" file name
// prefix, which the log does not record) and
// delta/spark-table-with-dv-special-char (a "p" DV path holding an
// unexpanded "{{FOLDER_WITH_SPECIAL_CHAR}}" placeholder).
var liveRowTables = []struct {
	fixture, covers string
	rows            map[string]int // snapshot dir -> rows
}{
	// Rows per version from the log: 10 rows, minus the DV cardinality.
	{"delta-kernel-rs/cdf-table-with-dv", "inline (i) and file (u) deletion vectors, added and removed over time",
		map[string]int{"@v0": 10, "@v1": 8, "@v2": 10, "@v3": 6, "@v4": 8, "@v5": 9, "@latest": 10}},
	{"delta-rs/table_with_deletion_logs", "deletion vectors + checkpoints", nil},
	{"delta-kernel-rs/with-short-dv", "deletion vector (text-only expected)", nil},
	{"delta-kernel-rs/table-with-dv-small", "deletion vector (text-only expected)", nil},
	{"delta-kernel-rs/v2-checkpoints-json-with-sidecars", "V2 checkpoints (JSON) with sidecars", nil},
	{"delta-kernel-rs/v2-parquet-sidecars-struct-stats-only", "V2 checkpoint (Parquet) with sidecars", nil},
	{"delta/kernel-kernel-pagination-v2-checkpoint-parquet", "V2 checkpoint with sidecars, commits after it", nil},
	{"delta/kernel-kernel-pagination-multi-part-checkpoints", "multi-part checkpoint", nil},
	{"delta-rs/delta-0.8.0-null-partition", "null partition values", nil},
	{"delta-rs/delta-0.8.0-special-partition", "escaped partition values", nil},
	{"delta-kernel-rs/type-widening", "type widening", nil},
}

func TestMountLiveRows(t *testing.T) {
	testenv.RequireFUSE(t)
	var sources []mount.Source
	for i, c := range liveRowTables {
		sources = append(sources, mount.Source{Name: fmt.Sprint("t", i), URL: testenv.Fixture(t, c.fixture)})
	}
	mnt := mountFS(t, mount.Config{Sources: sources})
	for i, c := range liveRowTables {
		t.Run(c.fixture, func(t *testing.T) {
			facts := testenv.LoadFixtureJSON(t, c.fixture)
			want, wantFiles := c.rows, -1
			if want == nil {
				rows, _ := facts["live_rows_footer_minus_dv"].(float64)
				files, _ := facts["live_files"].(float64)
				want, wantFiles = map[string]int{"@latest": int(rows)}, int(files)
			}
			mapped := facts["column_mapping"] != "none"
			for _, snap := range slices.Sorted(maps.Keys(want)) {
				dir, err := filepath.EvalSymlinks(filepath.Join(mnt, fmt.Sprint("t", i), snap))
				if err != nil {
					t.Fatal(err)
				}
				st, err := checkLiveFiles(dir, testenv.Fixture(t, c.fixture), !mapped)
				if err != nil {
					t.Fatalf("%s %s: %v", c.fixture, snap, err)
				}
				if st.rows != want[snap] || (wantFiles >= 0 && st.files != wantFiles) {
					t.Errorf("%s %s: %d rows in %d files, want %d rows (in %d files; -1: any)",
						c.fixture, snap, st.rows, st.files, want[snap], wantFiles)
				}
				t.Logf("%s %s (%s): %d rows in %d files, %d with rows removed",
					c.fixture, snap, c.covers, st.rows, st.files, st.filtered)
			}
		})
	}
}

// liveStats counts what checkLiveFiles saw.
type liveStats struct{ rows, files, filtered int }

// checkLiveFiles reads every .parquet file under dir and, when compareRaw,
// checks that its rows are an in-order subset of the rows of the file of
// the same base name under tableDir (when exactly one exists).
func checkLiveFiles(dir, tableDir string, compareRaw bool) (liveStats, error) {
	var st liveStats
	served, err := parquetFiles(dir)
	if err != nil {
		return st, err
	}
	stored, err := parquetFiles(tableDir)
	if err != nil {
		return st, err
	}
	byName := map[string][]string{}
	for _, p := range stored {
		byName[filepath.Base(p)] = append(byName[filepath.Base(p)], p)
	}
	for _, p := range served {
		keys, cols, err := rowKeys(p, nil, widenedValue)
		if err != nil {
			return st, err
		}
		st.rows, st.files = st.rows+len(keys), st.files+1
		raw := byName[filepath.Base(p)]
		if !compareRaw || len(raw) != 1 {
			continue
		}
		rawKeys, _, err := rowKeys(raw[0], cols, widenedValue)
		if err != nil {
			return st, err
		}
		if !isSubsequence(keys, rawKeys) {
			return st, fmt.Errorf("%s: rows are not an in-order subset of those of %s", p, raw[0])
		}
		if len(keys) < len(rawKeys) {
			st.filtered++
		}
	}
	return st, nil
}

// fileKeys returns the canonical text of every row of the Parquet file at
// path, projected on cols (nil: all the file's columns), and the columns.
func fileKeys(path string, cols []string) ([]string, []string, error) {
	return rowKeys(path, cols, func(v any) any { return v })
}

// rowKeys is fileKeys with every value mapped by conv first.
func rowKeys(path string, cols []string, conv func(any) any) ([]string, []string, error) {
	f, err := openParquet(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if cols == nil {
		cols = f.cols
	}
	var keys []string
	proj := make(map[string]any, len(cols))
	err = f.each(func(row map[string]any) {
		for _, c := range cols {
			proj[c] = conv(row[c])
		}
		keys = append(keys, canonJSON(proj))
	})
	return keys, cols, err
}

// isSubsequence reports whether sub appears in seq in order.
func isSubsequence(sub, seq []string) bool {
	i := 0
	for _, s := range seq {
		if i < len(sub) && sub[i] == s {
			i++
		}
	}
	return i == len(sub)
}

// widenedValue is v in a form that a widening of its type does not
// change (the protocol's "Type Widening"), for comparing a served file,
// whose columns have the table's types, with the stored file it comes
// from: numbers (integers, floats, decimal strings) as exact rationals, a
// date as the timestamp of its midnight. Nested values are compared as
// they are.
func widenedValue(v any) any {
	var r *big.Rat
	switch x := v.(type) {
	case int64:
		r = new(big.Rat).SetInt64(x)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return v
		}
		r = new(big.Rat).SetFloat64(x)
	case string:
		if d, err := time.Parse(time.DateOnly, x); err == nil {
			return d.UTC().Format(time.RFC3339)
		}
		if _, err := time.Parse(time.RFC3339, x); err == nil {
			return x
		}
		var ok bool
		if r, ok = new(big.Rat).SetString(x); !ok || strings.ContainsAny(x, "/eE") {
			return v
		}
	default:
		return v
	}
	return "number:" + r.RatString()
}
