package delta

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// countingStore records the List calls made through it.
type countingStore struct {
	Storage
	mu    sync.Mutex
	lists []string // "dir@from"
}

func (c *countingStore) List(ctx context.Context, dir, from string) ([]ObjectInfo, error) {
	c.mu.Lock()
	c.lists = append(c.lists, dir+"@"+from)
	c.mu.Unlock()
	return c.Storage.List(ctx, dir, from)
}

const testSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`

// writeLog writes commits (version -> NDJSON lines) into a new table dir.
func writeLog(t *testing.T, commits map[int64][]string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	for v, lines := range commits {
		p := filepath.Join(root, filepath.FromSlash(CommitKey(v)))
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func header() []string {
	return []string{
		`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`,
		`{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":` + quote(testSchema) + `,"partitionColumns":[],"configuration":{}}}`,
	}
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func addLine(path string, dv string) string {
	if dv != "" {
		dv = `,"deletionVector":` + dv
	}
	return fmt.Sprintf(`{"add":{"path":%q,"partitionValues":{},"size":10,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":5}"%s}}`, path, dv)
}

func removeLine(path string, dv string) string {
	if dv != "" {
		dv = `,"deletionVector":` + dv
	}
	return fmt.Sprintf(`{"remove":{"path":%q,"dataChange":true%s}}`, path, dv)
}

func livePaths(s *Snapshot) string {
	var out []string
	for _, a := range s.Files() {
		out = append(out, a.Path+"#"+a.DeletionVector.UniqueID())
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestReplayKeysByPathAndDV(t *testing.T) {
	dvA := `{"storageType":"i","pathOrInlineDv":"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L","sizeInBytes":40,"cardinality":1}`
	dvB := `{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":1,"sizeInBytes":40,"cardinality":2}`
	root := writeLog(t, map[int64][]string{
		0: append(header(), addLine("a", ""), addLine("b", "")),
		// add of the new DV before the remove of the old one: order must not matter.
		1: {addLine("a", dvA), removeLine("a", "")},
		2: {removeLine("a", dvA), addLine("a", dvB)},
		3: {removeLine("b", ""), addLine("b", "")}, // re-add of the same key
		4: {removeLine("b", "")},
	})
	tbl := Open(dirStore{root}, Options{})
	ctx := context.Background()
	want := map[int64]string{0: "a#,b#", 1: "a#i" + strings.Split(dvA, `"`)[7] + ",b#", 2: "a#uab^-aqEH.-t@S}K{vb[*k^@1,b#", 3: "a#uab^-aqEH.-t@S}K{vb[*k^@1,b#", 4: "a#uab^-aqEH.-t@S}K{vb[*k^@1"}
	for v := int64(4); v >= 0; v-- { // newest first: older versions reuse caches
		s, err := tbl.Snapshot(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if got := livePaths(s); got != want[v] {
			t.Errorf("v%d live = %s, want %s", v, got, want[v])
		}
	}
	s, _ := tbl.Snapshot(ctx, 4)
	if len(s.Tombstones()) != 3 { // (a,""), (a,dvA), (b,"")
		t.Errorf("tombstones %d, want 3", len(s.Tombstones()))
	}
}

func TestBadCommitsAreClearErrors(t *testing.T) {
	cases := map[string]struct {
		commits map[int64][]string
		want    []string
	}{
		"truncated line": {map[int64][]string{0: header(), 1: {`{"add":{"path":"x","partitionV`}}, []string{"version 1", "line 1"}},
		"not JSON":       {map[int64][]string{0: header(), 1: {`hello`}}, []string{"version 1", "not a JSON object"}},
		"gap":            {map[int64][]string{0: header(), 1: {addLine("a", "")}, 3: {addLine("b", "")}}, []string{"version 3", "commit 2 is missing"}},
		"no protocol":    {map[int64][]string{0: header()[1:]}, []string{"version 0", "no protocol"}},
		"unknown feature": {map[int64][]string{0: {`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors","fancyNewThing"],"writerFeatures":["deletionVectors","fancyNewThing"]}}`, header()[1]}},
			[]string{"fancyNewThing"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			root := writeLog(t, c.commits)
			_, err := Open(dirStore{root}, Options{}).Latest(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrCorruptLog) && !errors.Is(err, ErrUnsupportedFeature) {
				t.Errorf("error %v wraps neither ErrCorruptLog nor ErrUnsupportedFeature", err)
			}
			for _, w := range append(c.want, root) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestGapBeforeVersionStillReadsOlder: versions before a gap read; the one
// after it does not.
func TestGapBeforeVersionStillReadsOlder(t *testing.T) {
	root := writeLog(t, map[int64][]string{0: header(), 1: {addLine("a", "")}, 3: {addLine("b", "")}})
	tbl := Open(dirStore{root}, Options{})
	if s, err := tbl.Snapshot(context.Background(), 1); err != nil || livePaths(s) != "a#" {
		t.Fatalf("v1: %v", err)
	}
	vs, err := tbl.Versions(context.Background())
	if err != nil || len(vs) != 2 {
		t.Fatalf("versions %v, %v; want 0 and 1", vs, err)
	}
}

func TestLastCheckpointChecksum(t *testing.T) {
	// The spec's test vector (PROTOCOL.md, JSON checksum).
	data := `{"k0":"'v 0'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}`
	got, err := lastCheckpointChecksum([]byte(data))
	if err != nil || got != "6a92d155a59bf2eecbd4b4ec7fd1f875" {
		t.Errorf("checksum %s, %v", got, err)
	}
}

// TestLastCheckpointHintIsValidated: a garbage, torn or dangling
// _last_checkpoint falls back to listing; a good one makes the listing
// start at the checkpoint.
func TestLastCheckpointHintIsValidated(t *testing.T) {
	src := fixtureTable(t, "delta-kernel-rs/golden-checkpoint")
	for name, hint := range map[string]string{
		"garbage":   "\x00\x01garbage",
		"torn":      `{"version":10,"si`,
		"dangling":  `{"version":12,"size":3}`,
		"bad sum":   `{"version":10,"size":13,"checksum":"00000000000000000000000000000000"}`,
		"in future": `{"version":99,"size":3}`,
	} {
		t.Run(name, func(t *testing.T) {
			root := copyTable(t, src)
			if err := os.WriteFile(filepath.Join(root, "_delta_log", "_last_checkpoint"), []byte(hint), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(dirStore{root}, Options{}).Latest(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if s.Version() != 14 {
				t.Errorf("version %d, want 14", s.Version())
			}
		})
	}
	cs := &countingStore{Storage: dirStore{src}}
	if _, err := Open(cs, Options{}).Latest(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, l := range cs.lists {
		if l == LogDir+"@" || l == LogDir+"@"+versionPrefix(0) {
			t.Errorf("listed the whole log (%v) although _last_checkpoint names a checkpoint", cs.lists)
		}
	}
	// The snapshot is built from the listing that found the latest version:
	// one LIST in all (each is a round trip to an object store).
	if len(cs.lists) != 1 {
		t.Errorf("loading the latest snapshot made %d LISTs (%v), want 1", len(cs.lists), cs.lists)
	}
}

// TestMultiPartCheckpointMissingPart: a checkpoint missing a part is not
// used; the snapshot is rebuilt from commits and stays correct.
func TestMultiPartCheckpointMissingPart(t *testing.T) {
	src := fixtureTable(t, "delta-kernel-rs/golden-multi-part-checkpoint")
	want, err := Open(dirStore{src}, Options{}).Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	root := copyTable(t, src)
	parts, _ := filepath.Glob(filepath.Join(root, "_delta_log", "*.checkpoint.0000000001.*.parquet"))
	if len(parts) == 0 {
		t.Fatal("fixture has no multi-part checkpoint")
	}
	os.Remove(parts[0])
	got, err := Open(dirStore{root}, Options{}).Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Files()) != len(want.Files()) || got.Version() != want.Version() {
		t.Errorf("without a part: v%d %d files; with all parts: v%d %d files", got.Version(), len(got.Files()), want.Version(), len(want.Files()))
	}
}

func TestTimeTravelByModTime(t *testing.T) {
	root := writeLog(t, map[int64][]string{0: header(), 1: {addLine("a", "")}, 2: {addLine("b", "")}, 3: {addLine("c", "")}})
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	// v2's mtime goes backwards: it must count as v1 + 1 ms.
	mt := []time.Time{base, base.Add(time.Hour), base.Add(30 * time.Minute), base.Add(3 * time.Hour)}
	for v, m := range mt {
		if err := os.Chtimes(filepath.Join(root, filepath.FromSlash(CommitKey(int64(v)))), m, m); err != nil {
			t.Fatal(err)
		}
	}
	tbl := Open(dirStore{root}, Options{})
	ctx := context.Background()
	for _, c := range []struct {
		at   time.Time
		want int64
	}{
		{base, 0},
		{base.Add(59 * time.Minute), 0},
		{base.Add(time.Hour), 1},
		{base.Add(time.Hour + time.Millisecond), 2},
		{base.Add(2 * time.Hour), 2},
		{base.Add(3 * time.Hour), 3},
		{base.Add(240 * time.Hour), 3},
	} {
		v, err := tbl.VersionAt(ctx, c.at)
		if err != nil || v != c.want {
			t.Errorf("at %s: v%d, %v; want v%d", c.at, v, err, c.want)
		}
	}
	for _, at := range []time.Time{base.Add(-time.Second), time.Now().Add(time.Hour)} {
		if _, err := tbl.VersionAt(ctx, at); !errors.Is(err, ErrVersionNotFound) {
			t.Errorf("at %s: %v, want ErrVersionNotFound", at, err)
		}
	}
}

func TestTimeTravelByInCommitTimestamp(t *testing.T) {
	md := strings.Replace(header()[1], `"configuration":{}`, `"configuration":{"delta.enableInCommitTimestamps":"true"}`, 1)
	ci := func(ms int64) string {
		return fmt.Sprintf(`{"commitInfo":{"inCommitTimestamp":%d,"timestamp":%d}}`, ms, ms)
	}
	const t0 = 1_777_000_000_000
	root := writeLog(t, map[int64][]string{
		0: {ci(t0), header()[0], md},
		1: {ci(t0 + 1000), addLine("a", "")},
		2: {ci(t0 + 5000), addLine("b", "")},
	})
	// File mtimes say the opposite order: they must be ignored.
	for v := int64(0); v < 3; v++ {
		m := time.UnixMilli(t0 + 100000 - v*10000)
		os.Chtimes(filepath.Join(root, filepath.FromSlash(CommitKey(v))), m, m)
	}
	tbl := Open(dirStore{root}, Options{})
	for at, want := range map[int64]int64{t0: 0, t0 + 999: 0, t0 + 1000: 1, t0 + 4999: 1, t0 + 5000: 2} {
		v, err := tbl.VersionAt(context.Background(), time.UnixMilli(at))
		if err != nil || v != want {
			t.Errorf("at %d: v%d, %v; want v%d", at-t0, v, err, want)
		}
	}
	s, _ := tbl.Snapshot(context.Background(), 2)
	if s.Timestamp().UnixMilli() != t0+5000 {
		t.Errorf("v2 timestamp %v, want the in-commit timestamp", s.Timestamp())
	}
}

func TestHistory(t *testing.T) {
	root := writeLog(t, map[int64][]string{
		0: append([]string{`{"commitInfo":{"operation":"CREATE TABLE","engineInfo":"x","operationParameters":{"a":"1"}}}`}, header()...),
		1: {`{"commitInfo":{"operation":"WRITE","operationMetrics":{"numFiles":"1"}}}`, addLine("a", "")},
	})
	h, err := Open(dirStore{root}, Options{}).History(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0].Operation != "CREATE TABLE" || h[1].Operation != "WRITE" || h[1].OperationMetrics["numFiles"] != "1" || h[0].EngineInfo != "x" {
		t.Errorf("history %+v", h)
	}
}

func TestParseLogName(t *testing.T) {
	for name, want := range map[string]string{
		"00000000000000000010.json":                                                 "commit 10",
		"00000000000000000010.checkpoint.parquet":                                   "checkpoint 10",
		"00000000000000000010.checkpoint.0000000002.0000000003.parquet":             "multipart 10 2/3",
		"00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json": "uuid 10",
		"00000000000000000001.00000000000000000009.compacted.json":                  "compaction 1-9",
		"00000000000000000010.crc":                                                  "crc 10",
		".00000000000000000010.json.crc":                                            "",
		"00000000000000000010.json.tmp":                                             "",
		"_last_checkpoint":                                                          "",
		".DS_Store":                                                                 "",
		"00000000000000000010.checkpoint.0000000004.0000000003.parquet":             "",
		"00000000000000000003.00000000000000000001.compacted.json":                  "",
	} {
		f, ok := ParseLogName(name)
		got := ""
		if ok {
			switch f.Kind {
			case KindCommit:
				got = fmt.Sprintf("commit %d", f.Version)
			case KindCheckpoint:
				got = fmt.Sprintf("checkpoint %d", f.Version)
			case KindMultiPartCheckpt:
				got = fmt.Sprintf("multipart %d %d/%d", f.Version, f.Part, f.Parts)
			case KindUUIDCheckpoint:
				got = fmt.Sprintf("uuid %d", f.Version)
			case KindCompaction:
				got = fmt.Sprintf("compaction %d-%d", f.Version, f.EndVersion)
			case KindChecksum:
				got = fmt.Sprintf("crc %d", f.Version)
			}
		}
		if got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

func fixtureTable(t *testing.T, name string) string {
	t.Helper()
	return testenv.Fixture(t, name)
}

// copyTable copies a table's _delta_log (only) into a temp dir, so tests
// can damage it.
func copyTable(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(filepath.Join(src, "_delta_log"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
