package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/delta/action"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/parquet-go/parquet-go"
)

// ckFile is one checkpoint or sidecar Parquet file of the fixtures.
type ckFile struct {
	fixture     string // e.g. "delta-rs/simple_table_with_checkpoint"
	path        string // absolute
	version     int64  // -1 for sidecars
	kind        string // classic, multipart, uuid, sidecar
	part, parts int
}

var ckNameRE = regexp.MustCompile(`^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10})|\.([^.]+))?\.parquet$`)

func fixtureCheckpointFiles(t *testing.T) (string, []ckFile) {
	t.Helper()
	root := testenv.Fixtures(t)
	var files []ckFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fixture, _, ok := strings.Cut(filepath.ToSlash(rel), "/table/_delta_log/")
		if !ok {
			return nil
		}
		f := ckFile{fixture: fixture, path: p, version: -1}
		switch m := ckNameRE.FindStringSubmatch(d.Name()); {
		case filepath.Base(filepath.Dir(p)) == "_sidecars":
			f.kind = "sidecar"
		case m == nil:
			return nil
		case m[2] != "":
			f.kind = "multipart"
			f.part, _ = strconv.Atoi(m[2])
			f.parts, _ = strconv.Atoi(m[3])
		case m[4] != "":
			f.kind = "uuid"
		default:
			f.kind = "classic"
		}
		if f.kind != "sidecar" {
			f.version, _ = strconv.ParseInt(ckNameRE.FindStringSubmatch(d.Name())[1], 10, 64)
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		t.Fatalf("found only %d checkpoint files under %s", len(files), root)
	}
	return root, files
}

func readParquetFile(t *testing.T, path string) ([]*action.Action, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var acts []*action.Action
	err = ReadActions(bytes.NewReader(data), int64(len(data)), func(a *action.Action) error {
		acts = append(acts, a)
		return nil
	})
	return acts, err
}

func tableDir(root, fixture string) string { return filepath.Join(root, fixture, "table") }

func TestReadParquetActionsFixtures(t *testing.T) {
	root, files := fixtureCheckpointFiles(t)
	for _, f := range files {
		rel, _ := filepath.Rel(root, f.path)
		t.Run(rel, func(t *testing.T) {
			acts, err := readParquetFile(t, f.path)
			if err != nil {
				t.Fatal(err)
			}
			if f.kind == "sidecar" {
				for i, a := range acts {
					if a.Add == nil && a.Remove == nil {
						t.Errorf("sidecar row %d is not a file action: %+v", i, a)
					}
				}
			}
		})
	}
}

// ckActions is what one checkpoint (all its parts and sidecars) holds.
type ckActions struct {
	adds                 map[string]*action.Add
	protocols, metadatas int
	cpMeta               []*action.CheckpointMetadata
	sidecars, parts      int
}

func readWholeCheckpoint(t *testing.T, root string, parts []ckFile) *ckActions {
	t.Helper()
	c := &ckActions{adds: make(map[string]*action.Add)}
	var sidecars []*action.Sidecar
	collect := func(acts []*action.Action) {
		for _, a := range acts {
			switch {
			case a.Add != nil:
				if _, dup := c.adds[a.Add.Key()]; dup {
					t.Errorf("add %s twice", a.Add.Key())
				}
				c.adds[a.Add.Key()] = a.Add
			case a.Protocol != nil:
				c.protocols++
			case a.MetaData != nil:
				c.metadatas++
			case a.CheckpointMetadata != nil:
				c.cpMeta = append(c.cpMeta, a.CheckpointMetadata)
			case a.Sidecar != nil:
				sidecars = append(sidecars, a.Sidecar)
			}
		}
	}
	for _, p := range parts {
		acts, err := readParquetFile(t, p.path)
		if err != nil {
			t.Fatalf("%s: %v", p.path, err)
		}
		c.parts++
		collect(acts)
	}
	for _, sc := range sidecars {
		name, err := url.PathUnescape(sc.Path)
		if err != nil || sc.SizeInBytes <= 0 {
			t.Fatalf("bad sidecar action %+v", sc)
		}
		acts, err := readParquetFile(t, filepath.Join(tableDir(root, parts[0].fixture), "_delta_log", "_sidecars", name))
		if err != nil {
			t.Fatalf("sidecar %s: %v", name, err)
		}
		c.sidecars++
		collect(acts)
	}
	return c
}

// lastCheckpointAdds returns _last_checkpoint's numOfAddFiles when it
// describes version v.
func lastCheckpointAdds(t *testing.T, table string, v int64) (int, bool) {
	data, err := os.ReadFile(filepath.Join(table, "_delta_log", "_last_checkpoint"))
	if err != nil {
		return 0, false
	}
	var lc struct {
		Version       int64 `json:"version"`
		NumOfAddFiles *int  `json:"numOfAddFiles"`
	}
	if json.Unmarshal(data, &lc) != nil || lc.Version != v || lc.NumOfAddFiles == nil {
		return 0, false
	}
	return *lc.NumOfAddFiles, true
}

// replayCommits applies commits 0..v with action.Parse; ok is false when a
// commit is missing.
func replayCommits(t *testing.T, table string, v int64) (map[string]*action.Add, bool) {
	files := make(map[string]*action.Add)
	for i := int64(0); i <= v; i++ {
		data, err := os.ReadFile(filepath.Join(table, "_delta_log", fmt.Sprintf("%020d.json", i)))
		if err != nil {
			return nil, false
		}
		err = action.Parse(data, func(a *action.Action) error {
			if a.Add != nil {
				files[a.Add.Key()] = a.Add
			} else if a.Remove != nil {
				delete(files, a.Remove.Key())
			}
			return nil
		})
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	return files, true
}

func groupCheckpoints(files []ckFile) map[string][]ckFile {
	groups := make(map[string][]ckFile)
	for _, f := range files {
		if f.kind == "sidecar" {
			continue
		}
		k := fmt.Sprintf("%s@%d", f.fixture, f.version)
		if f.kind == "uuid" {
			k += ":" + filepath.Base(f.path)
		}
		groups[k] = append(groups[k], f)
	}
	return groups
}

func TestReadParquetActionsCheckpointContents(t *testing.T) {
	root, files := fixtureCheckpointFiles(t)
	groups := groupCheckpoints(files)
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	crossChecked := 0
	for _, k := range keys {
		parts := groups[k]
		t.Run(k, func(t *testing.T) {
			c := readWholeCheckpoint(t, root, parts)
			checkCheckpointShape(t, root, parts, c)
			if crossCheckReplay(t, root, parts[0], c) {
				crossChecked++
			}
		})
	}
	if crossChecked < 30 {
		t.Errorf("only %d checkpoints cross-checked against JSON replay", crossChecked)
	}
}

func checkCheckpointShape(t *testing.T, root string, parts []ckFile, c *ckActions) {
	t.Helper()
	f := parts[0]
	if f.kind == "multipart" && c.parts != f.parts {
		t.Errorf("read %d of %d parts", c.parts, f.parts)
	}
	wantProto, wantMeta := 1, 1
	switch f.fixture { // upstream removed them on purpose
	case "delta-kernel-rs/golden-deltalog-state-reconstruction-from-checkpoint-missing-metadata":
		wantMeta = 0
	case "delta-kernel-rs/golden-deltalog-state-reconstruction-from-checkpoint-missing-protocol":
		wantProto = 0
	}
	if c.protocols != wantProto || c.metadatas != wantMeta {
		t.Errorf("%d protocol and %d metaData rows, want %d and %d", c.protocols, c.metadatas, wantProto, wantMeta)
	}
	if f.kind == "uuid" && len(c.cpMeta) != 1 {
		t.Errorf("V2 checkpoint with %d checkpointMetadata rows", len(c.cpMeta))
	}
	for _, m := range c.cpMeta {
		if m.Version != f.version {
			t.Errorf("checkpointMetadata.version = %d, want %d", m.Version, f.version)
		}
	}
	if n, ok := lastCheckpointAdds(t, tableDir(root, f.fixture), f.version); ok && n != len(c.adds) {
		t.Errorf("%d adds, _last_checkpoint numOfAddFiles = %d", len(c.adds), n)
	}
}

// crossCheckReplay compares the checkpoint's adds with a replay of the
// JSON commits 0..v, when they all exist.
func crossCheckReplay(t *testing.T, root string, f ckFile, c *ckActions) bool {
	t.Helper()
	want, ok := replayCommits(t, tableDir(root, f.fixture), f.version)
	if !ok {
		return false
	}
	for k, w := range want {
		g := c.adds[k]
		if g == nil {
			t.Errorf("add %s of the JSON replay missing from the checkpoint", k)
			continue
		}
		if g.Size != w.Size || !reflect.DeepEqual(g.PartitionValues, w.PartitionValues) ||
			!reflect.DeepEqual(g.DeletionVector, w.DeletionVector) {
			t.Errorf("add %s differs:\ncheckpoint %s\njson       %s", k, jsonOf(g), jsonOf(w))
		}
		gn, gok := g.NumRecords()
		wn, wok := w.NumRecords()
		if gok && wok && gn != wn {
			t.Errorf("add %s: numRecords %d, JSON stats say %d", k, gn, wn)
		}
	}
	for k := range c.adds {
		if want[k] == nil {
			t.Errorf("checkpoint add %s not in the JSON replay", k)
		}
	}
	return true
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestReadParquetActionsStructStats(t *testing.T) {
	for _, tc := range []struct{ fixture, file string }{
		{"delta-kernel-rs/v1-single-part-struct-stats-only", "00000000000000000005.checkpoint.parquet"},
		{"delta-kernel-rs/v2-classic-parquet-struct-stats-only", "00000000000000000005.checkpoint.parquet"},
		{"delta-rs/delta-1.2.1-only-struct-stats", "00000000000000000010.checkpoint.parquet"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			acts, err := readParquetFile(t, filepath.Join(testenv.Fixture(t, tc.fixture), "_delta_log", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			adds := 0
			for _, a := range acts {
				if a.Add == nil {
					continue
				}
				adds++
				// The JSON stats are rebuilt from stats_parsed.
				n, ok := action.StatsNumRecords(a.Add.Stats)
				if !ok || a.Add.NumRecordsParsed == nil || n != *a.Add.NumRecordsParsed || !strings.Contains(a.Add.Stats, `"nullCount"`) {
					t.Errorf("add %s: stats %q, parsed %v: want the JSON rebuilt from stats_parsed", a.Add.Path, a.Add.Stats, a.Add.NumRecordsParsed)
				}
				if n, ok := a.Add.NumRecords(); !ok || n <= 0 {
					t.Errorf("add %s: NumRecords() = %d, %v", a.Add.Path, n, ok)
				}
			}
			if adds == 0 {
				t.Fatal("no add rows")
			}
		})
	}
}

// The DV descriptors of a checkpoint must be those of the commits.
func TestReadParquetActionsDeletionVectors(t *testing.T) {
	const fixture = "delta-kernel-rs/golden-dv-partitioned-with-checkpoint"
	table := testenv.Fixture(t, fixture)
	acts, err := readParquetFile(t, filepath.Join(table, "_delta_log", "00000000000000000010.checkpoint.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	want, ok := replayCommits(t, table, 10)
	if !ok {
		t.Fatal("commits 0..10 missing")
	}
	withDV := 0
	for _, a := range acts {
		if a.Add == nil || a.Add.DeletionVector == nil {
			continue
		}
		withDV++
		dv, w := a.Add.DeletionVector, want[a.Add.Key()]
		if w == nil || !reflect.DeepEqual(dv, w.DeletionVector) {
			t.Errorf("add %s: DV %s, commits say %s", a.Add.Path, jsonOf(dv), jsonOf(w))
		}
		if dv.StorageType != "u" || dv.Offset == nil || dv.SizeInBytes <= 0 || dv.Cardinality <= 0 {
			t.Errorf("add %s: implausible DV %s", a.Add.Path, jsonOf(dv))
		}
	}
	if withDV == 0 {
		t.Fatal("no add with a deletion vector")
	}
}

func realCheckpoint(t *testing.T) []byte {
	t.Helper()
	p := filepath.Join(testenv.Fixture(t, "delta-rs/table-with-domain-metadata"), "_delta_log", "00000000000000000108.checkpoint.parquet")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func countActions(data []byte) (int, error) {
	n := 0
	err := ReadActions(bytes.NewReader(data), int64(len(data)), func(*action.Action) error { n++; return nil })
	return n, err
}

func TestReadParquetActionsCorrupt(t *testing.T) {
	good := realCheckpoint(t)
	garbage := bytes.Repeat([]byte("deltafs!"), 512)
	fakeMagic := append(append([]byte("PAR1"), garbage...), []byte("\x10\x00\x00\x00PAR1")...)
	badFooter := bytes.Clone(good)
	copy(badFooter[len(badFooter)-200:], garbage[:150])
	for name, data := range map[string][]byte{
		"empty":          {},
		"magic only":     []byte("PAR1"),
		"garbage":        garbage,
		"fake magic":     fakeMagic,
		"truncated half": good[:len(good)/2],
		"truncated tail": good[:len(good)-1],
		"no footer":      good[:len(good)-8],
		"bad footer":     badFooter,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := countActions(data); !errors.Is(err, action.ErrCorruptLog) {
				t.Fatalf("err = %v, want action.ErrCorruptLog", err)
			}
		})
	}
}

// Damaged pages must give an error or wrong-but-decodable values, never a
// panic; every error must wrap action.ErrCorruptLog.
func TestReadParquetActionsDamagedBytes(t *testing.T) {
	good := realCheckpoint(t)
	failed := 0
	for off := 4; off < len(good)-8; off += 97 {
		for _, x := range []byte{0xff, 0x80, 0x01} {
			data := bytes.Clone(good)
			data[off] ^= x
			if _, err := countActions(data); err != nil {
				failed++
				if !errors.Is(err, action.ErrCorruptLog) {
					t.Fatalf("flip at %d: err = %v, want action.ErrCorruptLog", off, err)
				}
			}
		}
	}
	if failed == 0 {
		t.Fatal("no damaged copy was detected")
	}
}

type failingReaderAt struct {
	r     io.ReaderAt
	limit int64
	err   error
}

func (f *failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.limit {
		return 0, f.err
	}
	return f.r.ReadAt(p, off)
}

func TestReadParquetActionsReaderAndCallbackErrors(t *testing.T) {
	good := realCheckpoint(t)
	errStorage := errors.New("storage unavailable")
	r := &failingReaderAt{r: bytes.NewReader(good), limit: int64(len(good)) - 100, err: errStorage}
	err := ReadActions(r, int64(len(good)), func(*action.Action) error { return nil })
	if !errors.Is(err, errStorage) || errors.Is(err, action.ErrCorruptLog) {
		t.Errorf("reader failure: err = %v, want the storage error and not action.ErrCorruptLog", err)
	}
	r = &failingReaderAt{r: bytes.NewReader(good), limit: int64(len(good)) / 2, err: errStorage}
	err = ReadActions(r, int64(len(good)), func(*action.Action) error { return nil })
	if !errors.Is(err, errStorage) || errors.Is(err, action.ErrCorruptLog) {
		t.Errorf("reader failure in pages: err = %v, want the storage error and not action.ErrCorruptLog", err)
	}

	errStop := errors.New("stop")
	calls := 0
	err = ReadActions(bytes.NewReader(good), int64(len(good)), func(*action.Action) error { calls++; return errStop })
	if !errors.Is(err, errStop) || calls != 1 {
		t.Errorf("callback error: err = %v after %d calls, want errStop after 1", err, calls)
	}

	defer func() {
		if p := recover(); p != "callback bug" {
			t.Errorf("recovered %v, want the callback's panic to propagate", p)
		}
	}()
	_ = ReadActions(bytes.NewReader(good), int64(len(good)), func(*action.Action) error { panic("callback bug") })
	t.Error("the callback's panic was swallowed")
}

// Every field must come out of a checkpoint as action.Parse decodes it
// from JSON: nulls, empty maps and lists, null map values, DV offsets.
func TestReadParquetActionsMatchesJSON(t *testing.T) {
	type ckDomain struct {
		Domain        string `parquet:"domain"`
		Configuration string `parquet:"configuration"`
		Removed       bool   `parquet:"removed"`
	}
	type ckCPMeta struct {
		Version int64              `parquet:"version"`
		Tags    map[string]*string `parquet:"tags,optional"`
	}
	type ckSidecar struct {
		Path             string             `parquet:"path"`
		SizeInBytes      int64              `parquet:"sizeInBytes"`
		ModificationTime int64              `parquet:"modificationTime"`
		Tags             map[string]*string `parquet:"tags,optional"`
	}
	type row struct {
		ckSparkRow
		Domain     *ckDomain  `parquet:"domainMetadata,optional"`
		CPMeta     *ckCPMeta  `parquet:"checkpointMetadata,optional"`
		Sidecar    *ckSidecar `parquet:"sidecar,optional"`
		CommitInfo *struct {
			Op string `parquet:"operation"`
		} `parquet:"commitInfo,optional"`
	}
	s := func(v string) *string { return &v }
	i64 := func(v int64) *int64 { return &v }
	i32 := func(v int32) *int32 { return &v }
	yes := true
	rows := []row{
		{ckSparkRow: ckSparkRow{Protocol: &ckProtocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors", "v2Checkpoint"}}}},
		{ckSparkRow: ckSparkRow{Protocol: &ckProtocol{MinReaderVersion: 1, MinWriterVersion: 2}}},
		{ckSparkRow: ckSparkRow{MetaData: &ckMetadata{ID: "id1", Name: s("t"), Description: s("d"),
			Format: ckFormat{Provider: "parquet", Options: map[string]*string{}}, SchemaString: `{"type":"struct","fields":[]}`,
			PartitionColumns: []string{"a", "b"}, Configuration: map[string]*string{"k": s("v")}, CreatedTime: i64(7)}}},
		{ckSparkRow: ckSparkRow{Add: &ckAdd{Path: "a=1/f%201.parquet", PartitionValues: map[string]*string{"a": s("1"), "b": nil},
			Size: 10, ModificationTime: 11, DataChange: true, Tags: map[string]*string{"t": s("v")},
			DeletionVector: &ckDV{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: i32(1), SizeInBytes: 36, Cardinality: 2},
			BaseRowID:      i64(5), DefaultRowCommitVersion: i64(6), ClusteringProvider: s("liquid"), Stats: s(`{"numRecords":3}`)}}},
		{ckSparkRow: ckSparkRow{Add: &ckAdd{Path: "f2.parquet", PartitionValues: map[string]*string{}, Size: 1,
			DeletionVector: &ckDV{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 40, Cardinality: 6}}}},
		{ckSparkRow: ckSparkRow{Remove: &ckRemove{Path: "old.parquet", DeletionTimestamp: i64(9), DataChange: true,
			ExtendedFileMetadata: &yes, PartitionValues: map[string]*string{"a": nil}, Size: i64(12)}}},
		{ckSparkRow: ckSparkRow{Remove: &ckRemove{Path: "old2.parquet"}}},
		{ckSparkRow: ckSparkRow{Txn: &ckTxn{AppID: "app", Version: 3, LastUpdated: i64(4)}}},
		{ckSparkRow: ckSparkRow{Txn: &ckTxn{AppID: "app2", Version: 0}}},
		{Domain: &ckDomain{Domain: "delta.rowTracking", Configuration: `{"rowIdHighWaterMark":4}`}},
		{CPMeta: &ckCPMeta{Version: 2, Tags: map[string]*string{"numOfAddFiles": s("2")}}},
		{Sidecar: &ckSidecar{Path: "s1.parquet", SizeInBytes: 100, ModificationTime: 5}},
		{CommitInfo: &struct {
			Op string `parquet:"operation"`
		}{Op: "WRITE"}},
	}
	const ndjson = `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors","v2Checkpoint"]}}
{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"id1","name":"t","description":"d","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":["a","b"],"configuration":{"k":"v"},"createdTime":7}}
{"add":{"path":"a=1/f%201.parquet","partitionValues":{"a":"1","b":null},"size":10,"modificationTime":11,"dataChange":true,"tags":{"t":"v"},"deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":1,"sizeInBytes":36,"cardinality":2},"baseRowId":5,"defaultRowCommitVersion":6,"clusteringProvider":"liquid","stats":"{\"numRecords\":3}"}}
{"add":{"path":"f2.parquet","partitionValues":{},"size":1,"modificationTime":0,"dataChange":false,"deletionVector":{"storageType":"i","pathOrInlineDv":"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L","sizeInBytes":40,"cardinality":6}}}
{"remove":{"path":"old.parquet","deletionTimestamp":9,"dataChange":true,"extendedFileMetadata":true,"partitionValues":{"a":null},"size":12}}
{"remove":{"path":"old2.parquet","dataChange":false}}
{"txn":{"appId":"app","version":3,"lastUpdated":4}}
{"txn":{"appId":"app2","version":0}}
{"domainMetadata":{"domain":"delta.rowTracking","configuration":"{\"rowIdHighWaterMark\":4}","removed":false}}
{"checkpointMetadata":{"version":2,"tags":{"numOfAddFiles":"2"}}}
{"sidecar":{"path":"s1.parquet","sizeInBytes":100,"modificationTime":5}}
`
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf, parquet.MaxRowsPerRowGroup(5), parquet.PageBufferSize(64))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var want, got []*action.Action
	if err := action.Parse([]byte(ndjson), func(a *action.Action) error { want = append(want, a); return nil }); err != nil {
		t.Fatal(err)
	}
	err := ReadActions(bytes.NewReader(buf.Bytes()), int64(buf.Len()), func(a *action.Action) error {
		got = append(got, a)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d actions, want %d (the commitInfo row is skipped)", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("action %d:\n got %s\nwant %s", i, jsonOf(got[i]), jsonOf(want[i]))
		}
	}
}
