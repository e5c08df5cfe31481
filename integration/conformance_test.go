package integration

// The conformance of the mount, row by row: every fixture table with
// expected content is mounted and each expected version is read through
// @vN (and @latest) the way a legacy tool reads a Hive-partitioned
// directory of Parquet files, then compared as a multiset of rows with the
// expected content written by Spark or DAT.

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	_ "time/tzdata" // partitionTimeZone needs zones on machines without them

	dfs "github.com/deltafs/deltafs/fs"
	"github.com/deltafs/deltafs/internal/testenv"
	"github.com/parquet-go/parquet-go"
)

// partitionTimeZone names the fixtures whose timestamp partition values
// were written in the writer's session time zone rather than UTC (Spark
// before Delta's UTC rule): their expected content holds the instant, so
// the directory name is read in that zone. The mount serves names as the
// log has them, which is right.
var partitionTimeZone = map[string]string{
	"delta-kernel-rs/golden-data-reader-partition-values": "America/Los_Angeles",
}

// notComparable lists the fixtures with expected Parquet content that the
// conformance test does not compare, and why. Keep it short and honest:
// it is empty because type widening, timestamp_ntz, INT96 and legacy
// list/map layouts are all handled by the canonicalization.
var notComparable = map[string]string{}

// mustCover names, per feature the mount must get right, fixtures the
// conformance test must compare (TestConformanceCoverage checks that none
// of them is skipped).
var mustCover = map[string][]string{
	"deletion vectors (u) + checkpoint + partitions": {"delta-kernel-rs/golden-dv-partitioned-with-checkpoint"},
	"deletion vectors + column mapping name":         {"delta-kernel-rs/golden-dv-with-columnmapping"},
	"deletion vectors, several per table":            {"delta-kernel-rs/golden-log-replay-dv-key-cases"},
	"column mapping id": {"delta-kernel-rs/golden-table-with-columnmapping-mode-id",
		"delta-kernel-rs/golden-data-skipping-basic-stats-all-types-columnmapping-id"},
	"column mapping name":            {"delta-kernel-rs/golden-table-with-columnmapping-mode-name"},
	"v2 checkpoint":                  {"delta-kernel-rs/golden-v2-checkpoint-parquet"},
	"multi-part checkpoint":          {"delta-kernel-rs/golden-multi-part-checkpoint"},
	"null partition values":          {"dat/multi_partitioned", "delta-kernel-rs/golden-data-reader-partition-values"},
	"escaped partition values":       {"delta-kernel-rs/golden-data-reader-escaped-chars", "dat/multi_partitioned"},
	"schema changes":                 {"delta-kernel-rs/golden-time-travel-schema-changes-b"},
	"partition changes":              {"delta-kernel-rs/golden-time-travel-partition-changes-b"},
	"time travel over many versions": {"delta-kernel-rs/golden-snapshot-repartitioned"},
}

// conformanceTables returns the fixtures to compare with their Parquet
// expected versions, logging each one left out and why.
func conformanceTables(t *testing.T) map[string][]string {
	out := map[string][]string{}
	for _, fi := range testenv.Index(t) {
		var vers []string
		for _, v := range fi.ExpectedVersions {
			if v != "text" { // upstream text dumps, not Parquet
				vers = append(vers, v)
			}
		}
		switch n := missingFiles(t, fi.Name); {
		case len(vers) == 0:
		case notComparable[fi.Name] != "":
			t.Logf("not compared: %s: %s", fi.Name, notComparable[fi.Name])
		case n > 0:
			t.Logf("not compared: %s: %d live data files missing on disk", fi.Name, n)
		default:
			out[fi.Name] = vers
		}
	}
	return out
}

func TestMountConformance(t *testing.T) {
	testenv.RequireFUSE(t)
	tables := conformanceTables(t)
	var passed atomic.Int64
	t.Run("tables", func(t *testing.T) {
		for _, name := range slices.Sorted(maps.Keys(tables)) {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				mnt := mountTable(t, testenv.Fixture(t, name))
				for _, v := range tables[name] {
					if checkVersion(t, name, mnt, v) {
						passed.Add(1)
					}
				}
			})
		}
	})
	t.Logf("conformance: %d table versions of %d tables match their expected rows", passed.Load(), len(tables))
}

func TestConformanceCoverage(t *testing.T) {
	tables := conformanceTables(t)
	for feature, names := range mustCover {
		for _, name := range names {
			if _, ok := tables[name]; !ok {
				t.Errorf("coverage of %s: %s is not compared by TestMountConformance", feature, name)
			}
		}
	}
}

// missingFiles returns FIXTURE.json's live_files_missing_on_disk.
func missingFiles(t *testing.T, name string) int {
	n, _ := testenv.LoadFixtureJSON(t, name)["live_files_missing_on_disk"].(float64)
	return int(n)
}

// mountTable mounts the table at tableDir alone, as MOUNTPOINT/t, until
// the test ends, and returns MOUNTPOINT/t.
func mountTable(t *testing.T, tableDir string) string {
	t.Helper()
	mnt := mountFS(t, dfs.Config{Sources: []dfs.Source{{Name: "t", URL: tableDir}}})
	return filepath.Join(mnt, "t")
}

// checkVersion compares the rows under mnt/@<version> with the fixture's
// expected/<version>, reporting any difference as a test error.
func checkVersion(t *testing.T, name, mnt, version string) bool {
	t.Helper()
	expDir := testenv.Expected(t, name, version)
	exp, err := readExpected(expDir, nil)
	if err != nil {
		t.Errorf("%s: read expected/%s: %v", name, version, err)
		return false
	}
	if zone, ok := partitionTimeZone[name]; ok {
		if exp.schema.tsLoc, err = time.LoadLocation(zone); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(mnt, "@"+version)
	got, err := walkSnapshot(dir, exp.schema, nil)
	if err != nil {
		t.Errorf("%s @%s: %v", name, version, err)
		return false
	}
	if keys := diffKeys(got, exp.bag); len(keys) > 0 {
		t.Errorf("%s @%s: rows differ from expected/%s (mount: %d rows in %d files; expected: %d rows)\n%s",
			name, version, version, got.n, got.files, exp.bag.n, describeDiff(keys, dir, expDir, exp.schema))
		return false
	}
	return true
}

// tableSchema is the set of columns a comparison is over: the expected
// content's top-level columns, with their Parquet nodes for typing
// partition values.
type tableSchema struct {
	cols  []string
	nodes map[string]parquet.Node
	tsLoc *time.Location // zone of timestamp partition values; nil: UTC
}

// lookup returns the schema column matching name exactly or, failing that,
// case-insensitively (Spark's resolution).
func (s *tableSchema) lookup(name string) (string, bool) {
	if _, ok := s.nodes[name]; ok {
		return name, true
	}
	for _, c := range s.cols {
		if strings.EqualFold(c, name) {
			return c, true
		}
	}
	return "", false
}

// rowKey identifies a canonical row: 128 bits of hash of its canonical
// text. Keys are pointer-free so that million-row bags cost the garbage
// collector nothing; the text is kept only on demand (rowBag.keep).
type rowKey [16]byte

// keySeeds are fixed for the process, so keys of different bags compare.
var keySeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func hashRow(text []byte) rowKey {
	var k rowKey
	binary.LittleEndian.PutUint64(k[:8], maphash.Bytes(keySeeds[0], text))
	binary.LittleEndian.PutUint64(k[8:], maphash.Bytes(keySeeds[1], text))
	return k
}

// rowBag is a multiset of canonical rows.
type rowBag struct {
	counts   map[rowKey]int
	n, files int
	// keep, when not nil, receives the canonical text of every row whose
	// key it holds (to describe differences).
	keep map[rowKey]string
}

// newBag returns an empty bag with room for about n distinct rows.
func newBag(n int, keep map[rowKey]string) *rowBag {
	return &rowBag{counts: make(map[rowKey]int, n), keep: keep}
}

// expected is the content of one expected/<version> dir.
type expected struct {
	schema *tableSchema
	bag    *rowBag
}

// readExpected reads every .parquet file under dir (the expected content
// of one version); its columns are the union of the files' columns.
func readExpected(dir string, keep map[rowKey]string) (*expected, error) {
	paths, err := parquetFiles(dir)
	if err != nil {
		return nil, err
	}
	s := &tableSchema{nodes: map[string]parquet.Node{}}
	var files []*parquetFile
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var rows int64
	for _, path := range paths {
		f, err := openParquet(path)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		rows += f.pf.NumRows()
		for _, c := range f.cols {
			if _, ok := s.nodes[c]; !ok {
				s.cols = append(s.cols, c)
				s.nodes[c] = f.nodes[c]
			}
		}
	}
	bag := newBag(int(rows), keep)
	for _, f := range files {
		if err := bag.addFile(s, f, nil); err != nil {
			return nil, err
		}
	}
	return &expected{schema: s, bag: bag}, nil
}

// parquetFiles lists the .parquet files under dir, recursively, sorted.
func parquetFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			out = append(out, p)
		}
		return err
	})
	return out, err
}

// addFile adds every row of f, projected on the schema's columns:
// partition values (already typed) win over file columns, file columns
// match by name (exactly, else case-insensitively), and a column missing
// from both is null. A row's text is canonJSON of the projected row as a
// struct, written directly for speed.
func (b *rowBag) addFile(s *tableSchema, f *parquetFile, parts map[string]any) error {
	type source struct {
		prefix, fixed, file string // fixed: the canonical text when not from the file
	}
	from := map[string]string{} // schema column -> file column
	for _, c := range f.cols {
		if sc, ok := s.lookup(c); ok {
			if _, dup := from[sc]; !dup || sc == c {
				from[sc] = c
			}
		}
	}
	var srcs []source
	for _, c := range slices.Sorted(slices.Values(s.cols)) {
		src := source{prefix: strconv.Quote(c) + ":", fixed: "null"}
		if v, ok := parts[c]; ok {
			src.fixed = canonJSON(v)
		} else if fc, ok := from[c]; ok {
			src.file, src.fixed = fc, ""
		}
		srcs = append(srcs, src)
	}
	var text bytes.Buffer
	b.files++
	return f.each(func(row map[string]any) {
		text.Reset()
		text.WriteByte('{')
		for i, src := range srcs {
			if i > 0 {
				text.WriteByte(',')
			}
			text.WriteString(src.prefix)
			if src.file != "" {
				writeCanon(&text, row[src.file])
			} else {
				text.WriteString(src.fixed)
			}
		}
		text.WriteByte('}')
		k := hashRow(text.Bytes())
		b.counts[k]++
		b.n++
		if _, ok := b.keep[k]; ok {
			b.keep[k] = text.String()
		}
	})
}

// walkSnapshot reads dir as a legacy tool reads a Hive-partitioned table:
// it lists directories recursively (following a symlinked dir), takes
// col=value directory names as partition values (unescaped, typed by the
// schema) and reads every .parquet file.
func walkSnapshot(dir string, s *tableSchema, keep map[rowKey]string) (*rowBag, error) {
	bag := newBag(0, keep)
	return bag, walkDir(dir, s, map[string]any{}, bag)
}

func walkDir(dir string, s *tableSchema, parts map[string]any, bag *rowBag) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			sub, err := withPartition(parts, e.Name(), s)
			if err == nil {
				err = walkDir(p, s, sub, bag)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		case strings.HasSuffix(e.Name(), ".parquet"):
			f, err := openParquet(p)
			if err != nil {
				return err
			}
			err = bag.addFile(s, f, parts)
			f.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// withPartition returns parts plus the partition value named by a
// directory name col=value; a name without '=' adds nothing.
func withPartition(parts map[string]any, dirName string, s *tableSchema) (map[string]any, error) {
	k, v, ok := strings.Cut(dirName, "=")
	if !ok {
		return parts, nil
	}
	col, ok := s.lookup(unescapePathName(k))
	if !ok {
		return nil, fmt.Errorf("partition column %q is not in the expected schema %v", k, s.cols)
	}
	val, err := partitionValue(unescapePathName(v), s.nodes[col], s.tsLoc)
	if err != nil {
		return nil, fmt.Errorf("partition %s: %w", col, err)
	}
	out := make(map[string]any, len(parts)+1)
	for pk, pv := range parts {
		out[pk] = pv
	}
	out[col] = val
	return out, nil
}

// diffKeys returns the rows whose counts differ between got and want.
func diffKeys(got, want *rowBag) []rowKey {
	var diff []rowKey
	for k, n := range got.counts {
		if want.counts[k] != n {
			diff = append(diff, k)
		}
	}
	for k := range want.counts {
		if _, ok := got.counts[k]; !ok {
			diff = append(diff, k)
		}
	}
	return diff
}

// describeDiff re-reads the snapshot dir and the expected dir keeping the
// text of the differing rows, and lists the first few in sorted order with
// their counts on each side.
func describeDiff(keys []rowKey, dir, expDir string, s *tableSchema) string {
	gotText, wantText := map[rowKey]string{}, map[rowKey]string{}
	for _, k := range keys {
		gotText[k], wantText[k] = "", ""
	}
	got, err := walkSnapshot(dir, s, gotText)
	if err != nil {
		return fmt.Sprintf("  (re-reading the snapshot failed: %v)", err)
	}
	exp, err := readExpected(expDir, wantText)
	if err != nil {
		return fmt.Sprintf("  (re-reading the expected content failed: %v)", err)
	}
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		text := cmp.Or(gotText[k], wantText[k])
		lines = append(lines, fmt.Sprintf("  %s  (mount x%d, expected x%d)", text, got.counts[k], exp.bag.counts[k]))
	}
	slices.Sort(lines)
	return fmt.Sprintf("%d distinct rows differ; first ones:\n%s", len(keys), strings.Join(lines[:min(len(lines), 5)], "\n"))
}

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
	var sources []dfs.Source
	for i, c := range liveRowTables {
		sources = append(sources, dfs.Source{Name: fmt.Sprint("t", i), URL: testenv.Fixture(t, c.fixture)})
	}
	mnt := mountFS(t, dfs.Config{Sources: sources})
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
		keys, cols, err := fileKeys(p, nil)
		if err != nil {
			return st, err
		}
		st.rows, st.files = st.rows+len(keys), st.files+1
		raw := byName[filepath.Base(p)]
		if !compareRaw || len(raw) != 1 {
			continue
		}
		rawKeys, _, err := fileKeys(raw[0], cols)
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
			proj[c] = row[c]
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
