package integration

// A model-based test of the write and read paths as a whole: rapid draws
// sequences of appends (through the inboxes of two mounts of one table and
// through `deltafs append`, some of them killed at a crash point; files
// staged under temporary names and scratch directories renamed to final
// names, in one step or across steps, in both mounts at once, good ones
// and ones the table refuses: see model_rename_test.go),
// checkpoints (every third version) and reads (a version's directory in
// either mount, time travel), and after every step compares what the mounts
// serve with a reference kept here: the rows each version must hold, and
// a replay of the JSON commits written for this test alone (it shares no
// code with delta/).
//
// `make test` runs a few short sequences; `make model` runs many long ones
// (RAPID_CHECKS, RAPID_STEPS). A failure prints the seed and the shrunk
// sequence of steps; RAPID_SEED=N replays it.

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"testing"

	"github.com/parquet-go/parquet-go"
	"pgregory.net/rapid"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
	"github.com/deltafs/deltafs/writeback"
)

type modelRow struct {
	ID int64 `parquet:"id"`
}

// modelTable is the reference: rows[v] are the ids version v holds.
type modelTable struct {
	dir     string
	mounts  []string // mountpoints; the table is "t" in each
	rows    [][]int64
	nextID  int64
	files   int
	scratch string                  // the run's source files
	pending map[int][]*modelPending // staged in each mount's inbox, to be renamed
}

func TestModelAppendsAndReads(t *testing.T) {
	testenv.RequireFUSE(t)
	bin := deltafsBin(t)
	defaultRapid("rapid.checks", "RAPID_CHECKS", "5") // -short runs one
	defaultRapid("rapid.steps", "RAPID_STEPS", "12")
	rapid.Check(t, func(rt *rapid.T) {
		scratch, err := os.MkdirTemp("", "deltafs-model-")
		if err != nil {
			rt.Fatal(err)
		}
		rt.Cleanup(func() { os.RemoveAll(scratch) })
		m := &modelTable{dir: newModelTable(t), rows: [][]int64{nil}, scratch: scratch, pending: map[int][]*modelPending{}}
		var unmounts []func()
		for range 2 {
			mnt, u := modelMount(t, rt, m.dir)
			m.mounts, unmounts = append(m.mounts, mnt), append(unmounts, u)
		}
		actions := map[string]func(*rapid.T){
			"inbox append": func(rt *rapid.T) {
				m.inboxAppend(rt, rapid.IntRange(0, 1).Draw(rt, "mount"), rapid.IntRange(1, 5).Draw(rt, "rows"))
			},
			"cli append": func(rt *rapid.T) {
				crash := rapid.SampledFrom([]string{"", "", writeback.CrashStaged, writeback.CrashUploading, writeback.CrashUploaded,
					writeback.CrashCommitting, writeback.CrashCommitted, writeback.CrashCheckpointing}).Draw(rt, "crash")
				m.cliAppend(rt, t, bin, rapid.IntRange(1, 5).Draw(rt, "rows"), crash)
			},
			"rename append": func(rt *rapid.T) {
				m.renameAppend(rt, rapid.IntRange(0, 1).Draw(rt, "mount"), rapid.IntRange(1, 5).Draw(rt, "rows"))
			},
			"batch append":       func(rt *rapid.T) { m.batchAppend(rt, rapid.IntRange(0, 1).Draw(rt, "mount")) },
			"refused rename":     func(rt *rapid.T) { m.refusedRename(rt, rapid.IntRange(0, 1).Draw(rt, "mount")) },
			"refused batch":      func(rt *rapid.T) { m.refusedBatch(rt, rapid.IntRange(0, 1).Draw(rt, "mount")) },
			"stage":              func(rt *rapid.T) { m.stage(rt, rapid.IntRange(0, 1).Draw(rt, "mount")) },
			"rename staged":      func(rt *rapid.T) { m.renameStaged(rt) },
			"concurrent renames": func(rt *rapid.T) { m.concurrentRenames(rt) },
			"read version": func(rt *rapid.T) {
				m.readVersion(rt, rapid.IntRange(0, 1).Draw(rt, "mount"), rapid.IntRange(0, len(m.rows)-1).Draw(rt, "version"))
			},
			"time travel": func(rt *rapid.T) {
				m.timeTravel(rt, rapid.IntRange(0, 1).Draw(rt, "mount"), rapid.IntRange(0, len(m.rows)-1).Draw(rt, "version"))
			},
			"remount": func(rt *rapid.T) {
				// A fresh mount builds its snapshots from the newest checkpoint.
				i := rapid.IntRange(0, 1).Draw(rt, "mount")
				unmounts[i]()
				m.mounts[i], unmounts[i] = modelMount(t, rt, m.dir)
				m.pending[i] = nil // staged files live in a mount's memory: gone, never committed
			},
			"": func(rt *rapid.T) { m.checkLog(rt) },
		}
		rt.Repeat(actions)
	})
}

// defaultRapid shortens rapid's run unless the flag or its variable says otherwise.
func defaultRapid(name, env, v string) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if _, ok := os.LookupEnv(env); !ok && !set {
		flag.Set(name, v)
	}
}

// newModelTable writes version 0 of an empty table (one long column id,
// a checkpoint every 3 versions).
func newModelTable(t *testing.T) string {
	dir := t.TempDir()
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}}]}`
	meta, _ := json.Marshal(map[string]any{"id": "model", "format": map[string]any{"provider": "parquet", "options": map[string]string{}},
		"schemaString": schema, "partitionColumns": []string{}, "configuration": map[string]string{"delta.checkpointInterval": "3"}})
	body := `{"commitInfo":{"timestamp":1,"operation":"CREATE TABLE"}}` + "\n" +
		`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n" + `{"metaData":` + string(meta) + "}\n"
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", 0)), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// modelMount mounts the table in-process for one rapid run; unmount
// may be called before the run ends.
func modelMount(t *testing.T, rt *rapid.T, dir string) (mnt string, unmount func()) {
	cfg := mount.Config{Sources: []mount.Source{{Name: "t", URL: dir}}, Mountpoint: t.TempDir(), CacheDir: t.TempDir(),
		Refresh: 50 * time.Millisecond, Logger: discardLogger()}
	srv, err := mount.Mount(context.Background(), cfg)
	if err != nil {
		rt.Fatalf("mount: %v", err)
	}
	var once sync.Once
	unmount = func() {
		once.Do(func() {
			if err := srv.Unmount(); err != nil {
				rt.Errorf("unmount %s: %v", cfg.Mountpoint, err)
			}
		})
	}
	rt.Cleanup(unmount)
	return cfg.Mountpoint, unmount
}

// newRows draws the next n ids and writes them as a Parquet file.
func (m *modelTable) newRows(rt *rapid.T, n int) ([]int64, string) {
	ids := m.nextIDs(n)
	path := filepath.Join(m.scratch, m.nextName())
	if err := os.WriteFile(path, encodeIDs(rt, ids), 0o644); err != nil {
		rt.Fatal(err)
	}
	return ids, path
}

// commit records a new version holding the previous rows and ids.
func (m *modelTable) commit(ids []int64) {
	prev := m.rows[len(m.rows)-1]
	m.rows = append(m.rows, append(slices.Clone(prev), ids...))
}

func (m *modelTable) inboxAppend(rt *rapid.T, mount, n int) {
	ids, src := m.newRows(rt, n)
	data, err := os.ReadFile(src)
	if err != nil {
		rt.Fatal(err)
	}
	dst := filepath.Join(m.mounts[mount], "t", "inbox", filepath.Base(src))
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		rt.Fatalf("inbox append through mount %d: %v", mount, err)
	}
	m.commit(ids)
}

func (m *modelTable) cliAppend(rt *rapid.T, t *testing.T, bin string, n int, crash string) {
	ids, src := m.newRows(rt, n)
	var env []string
	if crash != "" {
		env = []string{writeback.EnvCrashPoint + "=" + crash}
	}
	r := runAppend(t, env, 0, m.dir, src)
	lands := crash == "" || crash == writeback.CrashCommitted || crash == writeback.CrashCheckpointing
	// A checkpoint crash point is only reached when a checkpoint is due.
	if crash == writeback.CrashCheckpointing && len(m.rows)%3 != 0 && r.err == nil {
		crash = ""
	}
	switch {
	case crash == "" && r.err != nil:
		rt.Fatalf("deltafs append: %v\n%s", r.err, r.output)
	case crash != "" && !r.killed:
		rt.Fatalf("deltafs append with crash point %s was not killed: %v\n%s", crash, r.err, r.output)
	case crash == "" && r.version != int64(len(m.rows)):
		rt.Fatalf("deltafs append committed version %d, want %d", r.version, len(m.rows))
	}
	if lands {
		m.commit(ids)
	}
}

// waitVersion waits until the mount serves version v (it refreshes every 50ms).
func waitVersion(rt *rapid.T, dir string, v int) {
	if !eventually(10*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "@v"+strconv.Itoa(v))); return err == nil }) {
		rt.Fatalf("%s: @v%d never appeared", dir, v)
	}
}

func (m *modelTable) readVersion(rt *rapid.T, mount, v int) {
	dir := filepath.Join(m.mounts[mount], "t")
	waitVersion(rt, dir, v)
	vdir := filepath.Join(dir, "@v"+strconv.Itoa(v))
	ents, err := os.ReadDir(vdir)
	if err != nil {
		rt.Fatal(err)
	}
	var names, want []string
	var got []int64
	for _, e := range ents {
		names = append(names, e.Name())
		got = append(got, readIDs(rt, filepath.Join(vdir, e.Name()))...)
	}
	for p := range replayLog(rt, m.dir, v) {
		want = append(want, filepath.Base(p))
	}
	sort.Strings(names)
	sort.Strings(want)
	if !slices.Equal(names, want) {
		rt.Fatalf("mount %d @v%d lists %v; the log replay says %v", mount, v, names, want)
	}
	exp := slices.Clone(m.rows[v])
	slices.Sort(got)
	slices.Sort(exp)
	if !slices.Equal(got, exp) {
		rt.Fatalf("mount %d @v%d holds ids %v, want %v", mount, v, got, exp)
	}
}

// timeTravel names version v by its commit time, the file time of its
// commit made strictly increasing as the protocol's readers do (computed
// here from the files): @<time> must resolve to version v, and the mount's
// _history.jsonl must give v that time.
func (m *modelTable) timeTravel(rt *rapid.T, mount, v int) {
	if v == 0 {
		return // version 0's time is that of the table's creation, not tested
	}
	dir := filepath.Join(m.mounts[mount], "t")
	waitVersion(rt, dir, v)
	want := commitTimes(rt, m.dir, v)[v]
	if got := historyTime(rt, dir, v); got != want {
		rt.Fatalf("mount %d: _history.jsonl gives version %d the time %d ms, its commit file %d", mount, v, got, want)
	}
	name := "@" + strings.Replace(time.UnixMilli(want).UTC().Format("20060102150405.000"), ".", "", 1)
	target, err := os.Readlink(filepath.Join(dir, name))
	if err != nil {
		rt.Fatalf("mount %d: readlink %s: %v", mount, name, err)
	}
	if target != "@v"+strconv.Itoa(v) {
		hist, _ := os.ReadFile(filepath.Join(dir, "_history.jsonl"))
		rt.Fatalf("mount %d: %s -> %s, want @v%d; the mount's history:\n%s", mount, name, target, v, hist)
	}
}

// historyTime is version v's timestamp (ms) in the mount's _history.jsonl,
// waiting for the mount's refresh to list it there too.
func historyTime(rt *rapid.T, dir string, v int) int64 {
	var ms int64
	var data []byte
	found := eventually(10*time.Second, func() bool {
		var err error
		if data, err = os.ReadFile(filepath.Join(dir, "_history.jsonl")); err != nil {
			return false
		}
		for _, line := range strings.Split(string(data), "\n") {
			var e struct {
				Version   int       `json:"version"`
				Timestamp time.Time `json:"timestamp"`
			}
			if json.Unmarshal([]byte(line), &e) == nil && e.Version == v {
				ms = e.Timestamp.UnixMilli()
				return true
			}
		}
		return false
	})
	if !found {
		rt.Fatalf("%s/_history.jsonl has no version %d although @v%d exists:\n%s", dir, v, v, data)
	}
	return ms
}

// checkLog runs after every step: the log's versions are the model's,
// and each inbox lists what the model staged there, nothing else.
func (m *modelTable) checkLog(rt *rapid.T) {
	m.checkVersions(rt)
	for i := range m.mounts {
		ents, err := os.ReadDir(m.inbox(i))
		if err != nil {
			rt.Fatal(err)
		}
		var got, want []string
		for _, e := range ents {
			if e.Name() != "_status.jsonl" {
				got = append(got, e.Name())
			}
		}
		for _, p := range m.pending[i] {
			want = append(want, p.tmp)
		}
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			rt.Fatalf("mount %d: the inbox lists %v, the model staged %v", i, got, want)
		}
	}
}

// checkVersions checks that the log's versions are the model's.
func (m *modelTable) checkVersions(rt *rapid.T) {
	n := 0
	for ; ; n++ {
		if _, err := os.Stat(filepath.Join(m.dir, "_delta_log", fmt.Sprintf("%020d.json", n))); err != nil {
			break
		}
	}
	if n != len(m.rows) {
		rt.Fatalf("the log has %d versions, the model %d", n, len(m.rows))
	}
}

// replayLog is the reference replay: the live data paths of version v from
// the JSON commits 0..v (adds minus removes, paths URL-decoded).
func replayLog(rt *rapid.T, dir string, v int) map[string]bool {
	live := map[string]bool{}
	for k := 0; k <= v; k++ {
		f, err := os.Open(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", k)))
		if err != nil {
			rt.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line struct {
				Add    *struct{ Path string } `json:"add"`
				Remove *struct{ Path string } `json:"remove"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				rt.Fatalf("commit %d: %v", k, err)
			}
			if line.Add != nil {
				p, _ := url.PathUnescape(line.Add.Path)
				live[p] = true
			}
			if line.Remove != nil {
				p, _ := url.PathUnescape(line.Remove.Path)
				delete(live, p)
			}
		}
		f.Close()
	}
	return live
}

// commitTimes are the commit file times (ms) of versions 0..v, made
// strictly increasing as the protocol's readers do.
func commitTimes(rt *rapid.T, dir string, v int) []int64 {
	out := make([]int64, v+1)
	for k := 0; k <= v; k++ {
		fi, err := os.Stat(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", k)))
		if err != nil {
			rt.Fatal(err)
		}
		out[k] = fi.ModTime().UnixMilli()
		if k > 0 && out[k] <= out[k-1] {
			out[k] = out[k-1] + 1
		}
	}
	return out
}

func readIDs(rt *rapid.T, path string) []int64 {
	f, err := os.Open(path)
	if err != nil {
		rt.Fatal(err)
	}
	defer f.Close()
	// Readers never see a physical type the schema does not allow (an
	// int32 file is re-encoded to long when staged).
	fi, err := f.Stat()
	if err != nil {
		rt.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		rt.Fatalf("open %s: %v", path, err)
	}
	if col, ok := pf.Schema().Lookup("id"); !ok || col.Node.Type().Kind() != parquet.Int64 {
		rt.Fatalf("%s: column id is not INT64: %v", path, pf.Schema())
	}
	r := parquet.NewGenericReader[modelRow](f)
	defer r.Close()
	rows := make([]modelRow, r.NumRows())
	n, err := r.Read(rows)
	if err != nil && err != io.EOF {
		rt.Fatalf("read %s: %v", path, err)
	}
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = rows[i].ID
	}
	return ids
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
