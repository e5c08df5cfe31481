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
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	_ "time/tzdata" // partitionTimeZone needs zones on machines without them

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// partitionTimeZone names the fixtures whose timestamp partition values
// were written in the writer's session time zone, not UTC: the log says
// "2021-09-08 11:11:11" where the expected content (and the data files)
// hold 18:11:11Z. The mount rightly serves the names as the log has them;
// the comparison reads them in that zone.
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
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: tableDir}}})
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

// canonRecord exercises the reader and the canonicalization on a file
// written by parquet-go: every integer width, floats, dates, timestamps,
// decimals, optional values, lists, maps and nested structs.
type canonRecord struct {
	I8  int8             `parquet:"i8"`
	U16 uint16           `parquet:"u16"`
	F32 float32          `parquet:"f32"`
	NaN float64          `parquet:"nan"`
	Day int32            `parquet:"day,date"`
	TS  int64            `parquet:"ts,timestamp(millisecond)"`
	Dec int64            `parquet:"dec,decimal(2:10)"`
	S   *string          `parquet:"s,optional"`
	L   []int32          `parquet:"l,list"`
	M   map[string]int64 `parquet:"m"`
	N   struct {
		A *int32   `parquet:"a,optional"`
		B []string `parquet:"b,list"`
	} `parquet:"n"`
}

func TestReadCanonicalRows(t *testing.T) {
	s, a := "x", int32(7)
	in := []canonRecord{{I8: -3, U16: 65535, F32: 1.5, NaN: math.NaN(), Day: 18878, TS: 1631099471123,
		Dec: -150, S: &s, L: []int32{1, 2}, M: map[string]int64{"b": 2, "a": 1}}, {}}
	in[0].N.A, in[0].N.B = &a, []string{"p", "q"}
	path := filepath.Join(t.TempDir(), "c.parquet")
	if err := parquet.WriteFile(path, in); err != nil {
		t.Fatal(err)
	}
	keys, _, err := fileKeys(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"day":"2021-09-08","dec":"-1.50","f32":f1.5,"i8":-3,"l":[1,2],"m":map["a":1,"b":2],` +
			`"n":{"a":7,"b":["p","q"]},"nan":NaN,"s":"x","ts":"2021-09-08T11:11:11.123Z","u16":65535}`,
		`{"day":"1970-01-01","dec":"0.00","f32":f0,"i8":0,"l":[],"m":map[],"n":{"a":null,"b":[]},` +
			`"nan":f0,"s":null,"ts":"1970-01-01T00:00:00Z","u16":0}`,
	}
	if !slices.Equal(keys, want) {
		t.Errorf("canonical rows:\n got %q\nwant %q", keys, want)
	}
}

func TestPartitionValues(t *testing.T) {
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		raw  string
		node parquet.Node
		loc  *time.Location
		want any // nil with wantErr false: null
		fail bool
	}{
		{hiveNull, parquet.Int(32), nil, nil, false},
		{"-7", parquet.Int(16), nil, int64(-7), false},
		{"1.1", parquet.Leaf(parquet.FloatType), nil, float64(float32(1.1)), false},
		{"true", parquet.Leaf(parquet.BooleanType), nil, true, false},
		{"2021-09-08", parquet.Date(), nil, "2021-09-08", false},
		{"2021-09-08 11:11:11", parquet.Timestamp(parquet.Microsecond), nil, "2021-09-08T11:11:11Z", false},
		{"2021-09-08 11:11:11.5", parquet.Timestamp(parquet.Microsecond), la, "2021-09-08T18:11:11.5Z", false},
		{"2021-09-08T11:11:11.000001Z", parquet.Timestamp(parquet.Microsecond), la, "2021-09-08T11:11:11.000001Z", false},
		{"1.5", parquet.Decimal(3, 10, parquet.Int64Type), nil, "1.500", false},
		{"-0.01", parquet.Decimal(2, 5, parquet.Int32Type), nil, "-0.01", false},
		{"1.234", parquet.Decimal(2, 5, parquet.Int32Type), nil, nil, true},
		{"x", parquet.Int(32), nil, nil, true},
		{"a b", parquet.String(), nil, "a b", false},
	} {
		got, err := partitionValue(tc.raw, tc.node, tc.loc)
		if (err != nil) != tc.fail || (!tc.fail && got != tc.want) {
			t.Errorf("partitionValue(%q, %v) = %v (%T), %v; want %v (%T), error %v",
				tc.raw, tc.node.Type(), got, got, err, tc.want, tc.want, tc.fail)
		}
	}
	for in, want := range map[string]string{"bar+%22": `bar+"`, "a%2Fb%3Ac": "a/b:c", "100%": "100%",
		"%zz": "%zz", "%2": "%2", "%F0%9F%98%88": "😈"} {
		if got := unescapePathName(in); got != want {
			t.Errorf("unescapePathName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestComparisonDetectsRawDVTable shows that the comparison can fail: the
// stored files of a DV table, read without applying the DVs and including
// removed files, do not match its expected content.
func TestComparisonDetectsRawDVTable(t *testing.T) {
	const name = "delta-kernel-rs/golden-dv-partitioned-with-checkpoint"
	expDir := testenv.Expected(t, name, "latest")
	exp, err := readExpected(expDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := testenv.Fixture(t, name)
	tree := t.TempDir() // the table dir without _delta_log (a checkpoint is Parquet too)
	for _, d := range readDirNames(t, raw) {
		if strings.HasPrefix(d, "part=") {
			if err := os.Symlink(filepath.Join(raw, d), filepath.Join(tree, d)); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := walkSnapshot(tree, exp.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := diffKeys(got, exp.bag)
	if len(keys) == 0 || got.n <= exp.bag.n {
		t.Fatalf("raw files (%d rows) compare equal to expected (%d rows)", got.n, exp.bag.n)
	}
	msg := describeDiff(keys, tree, expDir, exp.schema)
	if !strings.Contains(msg, "distinct rows differ") || !strings.Contains(msg, `"part":`) || !strings.Contains(msg, "expected x0") {
		t.Errorf("difference report lacks rows and counts:\n%s", msg)
	}
}
