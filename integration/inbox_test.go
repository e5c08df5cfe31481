package integration

// Appends through MOUNTPOINT/<table>/inbox/ on copies of fixture tables:
// a Parquet file written there becomes the next version when closed, or
// is refused by close() with the table unchanged.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// Fixture tables of the inbox tests.
const (
	fixtureAppend      = "dat/basic_append"                   // letter, number, a_float; unpartitioned
	fixturePartitioned = "dat/basic_partitioned"              // the same, partitioned by letter
	fixtureCMPart      = "delta-rs/table_with_column_mapping" // name mode, partitioned by "Company Very Short"
)

// basicRow is a row of the basic fixtures (all columns nullable).
type basicRow struct {
	Letter *string  `parquet:"letter,optional"`
	Number *int64   `parquet:"number,optional"`
	Float  *float64 `parquet:"a_float,optional"`
}

// basicDataRow is a row of basic_partitioned's data files (no partition
// column: its value comes from the directory).
type basicDataRow struct {
	Number *int64   `parquet:"number,optional"`
	Float  *float64 `parquet:"a_float,optional"`
}

// cmRow is a data row of table_with_column_mapping, by logical name.
type cmRow struct {
	Name *string `parquet:"Super Name,optional"`
}

// wrongRow has a column no fixture table has.
type wrongRow struct {
	Nope int64 `parquet:"nope"`
}

func ptr[T any](v T) *T { return &v }

// parquetBytes encodes rows as a Parquet file.
func parquetBytes[T any](t testing.TB, rows []T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// inboxCase is one append: the rows written, where, and their columns
// (with Parquet nodes to type partition values when comparing).
type inboxCase struct {
	fixture string
	dir     string // under inbox/, "" for the root
	data    func(t *testing.T) []byte
	schema  *tableSchema
	parts   map[string]any // partition values of the new rows, canonical
}

func basicSchema() *tableSchema {
	return &tableSchema{cols: []string{"letter", "number", "a_float"}, nodes: map[string]parquet.Node{
		"letter": parquet.Optional(parquet.String()), "number": parquet.Optional(parquet.Int(64)),
		"a_float": parquet.Optional(parquet.Leaf(parquet.DoubleType))}}
}

var inboxCases = map[string]inboxCase{
	"unpartitioned": {fixture: fixtureAppend, schema: basicSchema(), data: func(t *testing.T) []byte {
		return parquetBytes(t, []basicRow{{ptr("x"), ptr[int64](100), ptr(1.5)}, {nil, ptr[int64](101), nil}})
	}},
	"partitioned": {fixture: fixturePartitioned, dir: "letter=zz", schema: basicSchema(),
		parts: map[string]any{"letter": "zz"}, data: func(t *testing.T) []byte {
			return parquetBytes(t, []basicDataRow{{ptr[int64](7), ptr(0.25)}, {ptr[int64](8), nil}, {nil, nil}})
		}},
	"column mapping": {fixture: fixtureCMPart, dir: "Company Very Short=NEW",
		schema: &tableSchema{cols: []string{"Company Very Short", "Super Name"}, nodes: map[string]parquet.Node{
			"Company Very Short": parquet.Optional(parquet.String()), "Super Name": parquet.Optional(parquet.String())}},
		parts: map[string]any{"Company Very Short": "NEW"}, data: func(t *testing.T) []byte {
			return parquetBytes(t, []cmRow{{ptr("Newcomer Inc")}, {nil}})
		}},
}

// mountCopy copies a fixture table and mounts the copy as MOUNTPOINT/t;
// it returns the copy's root and MOUNTPOINT/t.
func mountCopy(t *testing.T, fixture string, cfg mount.Config) (string, string) {
	t.Helper()
	root := testenv.CopyFixture(t, fixture)
	cfg.Sources = []mount.Source{{Name: "t", URL: root}}
	return root, filepath.Join(mountFS(t, cfg), "t")
}

func TestInboxAppend(t *testing.T) {
	for name, c := range inboxCases {
		t.Run(name, func(t *testing.T) {
			root, tdir := mountCopy(t, c.fixture, mount.Config{})
			before := latestSnapshot(t, root)
			v := before.Version()
			dir := filepath.Join(tdir, "inbox", c.dir)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatalf("mkdir %s: %v", dir, err)
			}
			data := c.data(t)
			if err := os.WriteFile(filepath.Join(dir, "new.parquet"), data, 0o644); err != nil {
				t.Fatalf("write into the inbox: %v", err)
			}
			// close() returned: the version exists and @latest shows it.
			if got, err := os.Readlink(filepath.Join(tdir, "@latest")); err != nil || got != fmt.Sprintf("@v%d", v+1) {
				t.Errorf("@latest -> %q, %v right after close; want @v%d", got, err, v+1)
			}
			checkRows(t, c, tdir, v, data)
			checkNewLiveFile(t, root, before, c.parts)
			checkLastHistory(t, filepath.Join(tdir, "_history.jsonl"), v+1)
			if names := readDirNames(t, dir); slices.Contains(names, "new.parquet") {
				t.Errorf("committed file still listed in %s: %v", dir, names)
			}
			ev := inboxStatus(t, tdir)
			if len(ev) == 0 || ev[len(ev)-1].Version == nil || *ev[len(ev)-1].Version != v+1 {
				t.Errorf("status = %+v, want the commit of version %d last", ev, v+1)
			}
		})
	}
}

// checkRows compares the rows of @v(v+1) with those of @vv plus the file.
func checkRows(t *testing.T, c inboxCase, tdir string, v int64, data []byte) {
	t.Helper()
	want, err := walkSnapshot(filepath.Join(tdir, fmt.Sprintf("@v%d", v)), c.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "new.parquet")
	if err := os.WriteFile(local, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := openParquet(local)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := want.addFile(c.schema, f, c.parts); err != nil {
		t.Fatal(err)
	}
	got, err := walkSnapshot(filepath.Join(tdir, fmt.Sprintf("@v%d", v+1)), c.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	if keys := diffKeys(got, want); len(keys) > 0 || got.n != want.n {
		t.Errorf("@v%d holds %d rows, want %d (@v%d plus the file's); %d rows differ", v+1, got.n, want.n, v, len(keys))
	}
}

// checkNewLiveFile checks with the engine (what `deltafs ls` shows) that the
// new version has one more live file, in the right partition.
func checkNewLiveFile(t *testing.T, root string, before *delta.Snapshot, parts map[string]any) {
	t.Helper()
	after := latestSnapshot(t, root)
	old, now := liveFiles(t, before), liveFiles(t, after)
	if after.Version() != before.Version()+1 || len(now) != len(old)+1 {
		t.Fatalf("engine: version %d with %d files, want %d with %d", after.Version(), len(now), before.Version()+1, len(old)+1)
	}
	for p, f := range now {
		if _, ok := old[p]; ok {
			continue
		}
		if !strings.HasPrefix(filepath.Base(p), "part-00000-") || f.Add.Stats == "" {
			t.Errorf("new file %s: want a part-00000-<uuid> name and stats (stats %q)", p, f.Add.Stats)
		}
		for col, v := range parts {
			if got := f.PartitionValues[col]; got == nil || *got != v {
				t.Errorf("new file %s: partition %s = %v, want %v", p, col, got, v)
			}
		}
	}
}

// checkLastHistory checks that _history.jsonl ends with a WRITE at version.
func checkLastHistory(t *testing.T, path string, version int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	var last struct {
		Version   int64  `json:"version"`
		Operation string `json:"operation"`
	}
	if err := json.Unmarshal(lines[len(lines)-1], &last); err != nil || last.Version != version || last.Operation != "WRITE" {
		t.Errorf("last history line %s (%v), want version %d WRITE", lines[len(lines)-1], err, version)
	}
}

// inboxEvent is a line of inbox/_status.jsonl.
type inboxEvent struct {
	File    string `json:"file"`
	Version *int64 `json:"version"`
	Error   string `json:"error"`
	Errno   string `json:"errno"`
}

func inboxStatus(t *testing.T, tdir string) []inboxEvent {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tdir, "inbox", "_status.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return parseInboxStatus(t, data)
}

// parseInboxStatus parses the lines of an inbox's _status.jsonl.
func parseInboxStatus(t *testing.T, data []byte) []inboxEvent {
	t.Helper()
	var out []inboxEvent
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var e inboxEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("status line %s: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

func TestInboxRefusals(t *testing.T) {
	root, tdir := mountCopy(t, fixturePartitioned, mount.Config{})
	before := latestSnapshot(t, root)
	inbox := filepath.Join(tdir, "inbox")
	leaf := filepath.Join(inbox, "letter=a")
	if err := os.Mkdir(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	good := parquetBytes(t, []basicDataRow{{ptr[int64](1), ptr(1.0)}})
	cases := []struct {
		name, path string
		data       []byte
		reason     string // in the status line
	}{
		{"not parquet", filepath.Join(leaf, "text.parquet"), []byte("just some text\n"), "text.parquet"},
		{"truncated", filepath.Join(leaf, "cut.parquet"), good[:len(good)-5], "cut.parquet"},
		{"wrong column", filepath.Join(leaf, "wrong.parquet"), parquetBytes(t, []wrongRow{{1}}), "nope"},
		{"partition column in the file", filepath.Join(leaf, "withpart.parquet"),
			parquetBytes(t, []basicRow{{ptr("a"), ptr[int64](1), nil}}), "letter"},
		{"root of a partitioned table", filepath.Join(inbox, "root.parquet"), good, "inbox/letter=<value>/"},
	}
	for _, c := range cases {
		err := os.WriteFile(c.path, c.data, 0o644)
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", c.name, err)
		}
		ev := inboxStatus(t, tdir)
		if last := ev[len(ev)-1]; last.Errno != "EINVAL" || !strings.Contains(last.Error, c.reason) {
			t.Errorf("%s: last status %+v, want EINVAL naming %q", c.name, last, c.reason)
		}
	}
	if err := os.Mkdir(filepath.Join(inbox, "number=1"), 0o755); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("mkdir of a non-partition column: %v, want EINVAL", err)
	}
	if err := os.WriteFile(filepath.Join(tdir, "@latest", "x.parquet"), good, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write into a snapshot: %v, want EROFS", err)
	}
	if got := readDirNames(t, leaf); len(got) != 0 {
		t.Errorf("refused files still listed: %v", got)
	}
	after := latestSnapshot(t, root)
	if after.Version() != before.Version() || len(liveFiles(t, after)) != len(liveFiles(t, before)) {
		t.Errorf("table changed: version %d -> %d", before.Version(), after.Version())
	}
}

func TestInboxReadOnlyMount(t *testing.T) {
	_, tdir := mountCopy(t, fixtureAppend, mount.Config{ReadOnly: true})
	if names := readDirNames(t, tdir); slices.Contains(names, "inbox") {
		t.Errorf("read-only mount lists %v", names)
	}
	if err := os.WriteFile(filepath.Join(tdir, "inbox", "x.parquet"), []byte("PAR1"), 0o644); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("create in the missing inbox: %v, want ENOENT", err)
	}
	if err := os.Mkdir(filepath.Join(tdir, "inbox"), 0o755); !errors.Is(err, syscall.EROFS) {
		t.Errorf("mkdir inbox on a read-only mount: %v, want EROFS", err)
	}
}

// TestInboxTouchThenWrite: an empty file closed by touch stays staged;
// written later, it commits once, even when closed through a dup'd fd.
func TestInboxTouchThenWrite(t *testing.T) {
	root, tdir := mountCopy(t, fixtureAppend, mount.Config{})
	v := latestSnapshot(t, root).Version()
	p := filepath.Join(tdir, "inbox", "late.parquet")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatalf("touch: %v", err)
	}
	if st, err := os.Stat(p); err != nil || st.Size() != 0 {
		t.Fatalf("empty staged file: %v, %v", st, err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(parquetBytes(t, []basicRow{{ptr("late"), ptr[int64](1), nil}})); err != nil {
		t.Fatal(err)
	}
	fd2, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Close(fd2); err != nil {
		t.Fatalf("close of the dup: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if got := latestSnapshot(t, root).Version(); got != v+1 {
		t.Errorf("version %d after touch+write+2 closes, want %d", got, v+1)
	}
}

// TestInboxForkedClose: a child process closing an inherited descriptor
// of a half-written file does not decide its outcome (FUSE flushes on
// every close); the opener's close does.
func TestInboxForkedClose(t *testing.T) {
	root, tdir := mountCopy(t, fixtureAppend, mount.Config{})
	v := latestSnapshot(t, root).Version()
	data := parquetBytes(t, []basicRow{{ptr("forked"), ptr[int64](2), nil}})
	f, err := os.Create(filepath.Join(tdir, "inbox", "forked.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data[:len(data)/2]); err != nil {
		t.Fatal(err)
	}
	child := exec.Command("true")
	child.ExtraFiles = []*os.File{f}
	if err := child.Run(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if _, err := f.Write(data[len(data)/2:]); err != nil {
		t.Fatalf("write after the child closed its copy: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if got := latestSnapshot(t, root).Version(); got != v+1 {
		t.Errorf("version %d, want %d", got, v+1)
	}
}

// TestInboxConcurrentMounts: 8 writers over two mounts of one table all
// land, each exactly once, in contiguous versions.
func TestInboxConcurrentMounts(t *testing.T) {
	root := testenv.CopyFixture(t, fixtureAppend)
	v := latestSnapshot(t, root).Version()
	var inboxes []string
	for range 2 {
		mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}})
		inboxes = append(inboxes, filepath.Join(mnt, "t", "inbox"))
	}
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		data := parquetBytes(t, []basicRow{{ptr(fmt.Sprint("w", i)), ptr(int64(i)), nil}})
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = os.WriteFile(filepath.Join(inboxes[i%2], fmt.Sprintf("w%d.parquet", i)), data, 0o644)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	seen := map[string]int64{}
	for ver := v + 1; ver <= v+writers; ver++ {
		for _, name := range commitSources(t, root, ver) {
			if prev, dup := seen[name]; dup {
				t.Errorf("%s committed in versions %d and %d", name, prev, ver)
			}
			seen[name] = ver
		}
	}
	if len(seen) != writers {
		t.Errorf("versions %d..%d hold %v, want the %d files once each", v+1, v+writers, seen, writers)
	}
	if got := latestSnapshot(t, root).Version(); got != v+writers {
		t.Errorf("latest version %d, want %d", got, v+writers)
	}
}

// commitSources returns the user file names a commit records
// (commitInfo "deltafs.sourceFiles"), failing when it has no single add.
func commitSources(t *testing.T, root string, version int64) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "_delta_log", fmt.Sprintf("%020d.json", version)))
	if err != nil {
		t.Fatalf("commit %d: %v", version, err)
	}
	var names []string
	adds := 0
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var a struct {
			Add        *json.RawMessage `json:"add"`
			CommitInfo *struct {
				Sources []string `json:"deltafs.sourceFiles"`
			} `json:"commitInfo"`
		}
		if err := json.Unmarshal(line, &a); err != nil {
			t.Fatalf("commit %d: %v", version, err)
		}
		if a.Add != nil {
			adds++
		}
		if a.CommitInfo != nil {
			names = append(names, a.CommitInfo.Sources...)
		}
	}
	if adds != 1 {
		t.Errorf("commit %d has %d adds, want 1", version, adds)
	}
	return names
}

// BenchmarkInboxSmallCommit measures close() of small files dropped into
// the inbox of a local table, one writer: each is one commit.
func BenchmarkInboxSmallCommit(b *testing.B) {
	root := testenv.CopyFixture(b, fixtureAppend)
	mnt := mountFS(b, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}})
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[basicRow](&buf)
	w.Write([]basicRow{{ptr("b"), ptr[int64](1), ptr(2.0)}})
	w.Close()
	inbox := filepath.Join(mnt, "t", "inbox")
	i := 0
	for b.Loop() {
		if err := os.WriteFile(filepath.Join(inbox, fmt.Sprintf("b%d.parquet", i)), buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "commits/s")
}
