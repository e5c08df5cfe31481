package mount

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/nodes"
)

// copyDir copies a fixture table into dst (tests never write fixtures).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// mountForMetrics mounts a writable copy of dat/basic_append as "plain",
// the DV fixture as "dv" and a refused table, all with userspace reads.
func mountForMetrics(t *testing.T) (*Server, string) {
	testenv.RequireFUSE(t)
	plain := filepath.Join(t.TempDir(), "plain")
	copyDir(t, testenv.Fixture(t, "dat/basic_append"), plain)
	fx := testenv.Fixtures(t)
	cfg := Config{
		Sources: []Source{
			{Name: "plain", URL: plain},
			{Name: "dv", URL: filepath.Join(fx, "delta-kernel-rs/golden-dv-partitioned-with-checkpoint/table")},
			{Name: "refused", URL: filepath.Join(fx, "delta-rs/simple_table_features/table")},
		},
		Mountpoint: t.TempDir(), CacheDir: t.TempDir(), NoPassthrough: true,
		Logger: slog.New(slog.DiscardHandler),
	}
	srv, err := Mount(context.Background(), cfg)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return srv, cfg.Mountpoint
}

// scrape returns the metrics as "name{labels}" -> value.
func scrape(t *testing.T, srv *Server) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	out := map[string]float64{}
	for line := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(strings.TrimSpace(line[i+1:]), 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// readFirstFile reads a whole data file under dir (recursively) and
// returns its size.
func readFirstFile(t *testing.T, dir string) int {
	t.Helper()
	if target, err := os.Readlink(dir); err == nil { // @latest
		dir = filepath.Join(filepath.Dir(dir), target)
	}
	var size int
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || size > 0 || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		b, err := os.ReadFile(p)
		size = len(b)
		return err
	})
	if err != nil || size == 0 {
		t.Fatalf("read a data file under %s: %v (size %d)", dir, err, size)
	}
	return size
}

// readAllFiles reads every data file under dir (recursively).
func readAllFiles(t *testing.T, dir string) {
	t.Helper()
	if target, err := os.Readlink(dir); err == nil { // @latest
		dir = filepath.Join(filepath.Dir(dir), target)
	}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		_, err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatalf("read the data files under %s: %v", dir, err)
	}
}

func TestMetricsMove(t *testing.T) {
	srv, mnt := mountForMetrics(t)
	before := scrape(t, srv)
	n := readFirstFile(t, filepath.Join(mnt, "plain", "@latest"))
	readAllFiles(t, filepath.Join(mnt, "dv", "@latest")) // some with deletion vectors: materialized
	os.ReadFile(filepath.Join(mnt, "refused", "@latest", "x"))
	after := scrape(t, srv)

	checks := []struct {
		name string
		min  float64
	}{
		{"deltafs_served_bytes_total", float64(n)},
		{"deltafs_materializations_total{result=\"ok\"}", 1},
		{"deltafs_cache_disk_builds_total", 1},
		{"deltafs_file_opens_total{path=\"userspace\"}", 2},
		{"deltafs_fuse_request_duration_seconds_count{op=\"lookup\"}", 3},
		{"deltafs_fuse_request_duration_seconds_count{op=\"read\"}", 2},
		{"deltafs_fuse_errors_total{errno=\"EOPNOTSUPP\",op=\"lookup\"}", 1},
	}
	for _, c := range checks {
		if got := after[c.name] - before[c.name]; got < c.min {
			t.Errorf("%s moved by %v, want >= %v", c.name, got, c.min)
		}
	}
	if got := after[`deltafs_storage_request_duration_seconds_count{op="list"}`]; got < 1 {
		t.Errorf("no storage list request recorded (%v)", got)
	}
	gauges := map[string]float64{
		`deltafs_table_version{table="plain"}`:   1,
		`deltafs_table_refused{table="plain"}`:   0,
		`deltafs_table_refused{table="refused"}`: 1,
		`deltafs_table_version{table="refused"}`: -1,
	}
	for name, want := range gauges {
		if got, ok := after[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
}

func TestMetricsAndStatusOfInbox(t *testing.T) {
	srv, mnt := mountForMetrics(t)
	inbox := filepath.Join(mnt, "plain", nodes.InboxName)
	if err := os.WriteFile(filepath.Join(inbox, "bad.parquet"), []byte("not parquet"), 0o644); err == nil {
		t.Fatal("a non-Parquet file was accepted")
	}
	data, err := os.ReadFile(filepath.Join(testenv.Fixture(t, "dat/basic_append"), "part-00000-3c9f01c2-6db4-4cbc-a744-dbc2f79eb78a-c000.snappy.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inbox, "good.parquet"), data, 0o644); err != nil {
		t.Fatalf("append a valid file: %v", err)
	}
	time.Sleep(1500 * time.Millisecond) // a refresh tick sets the version gauge
	m := scrape(t, srv)
	for name, want := range map[string]float64{
		`deltafs_commits_total{table="plain"}`:                           1,
		`deltafs_inbox_refusals_total{errno="EINVAL",op="inbox commit"}`: 1,
		`deltafs_table_version{table="plain"}`:                           2,
		`deltafs_fuse_errors_total{errno="EINVAL",op="flush"}`:           1,
	} {
		if m[name] != want {
			t.Errorf("%s = %v, want %v", name, m[name], want)
		}
	}

	st := readStatus(t, mnt)
	tables := map[string]nodes.TableStatus{}
	for _, ts := range st.Tables {
		tables[ts.Name] = ts
	}
	plain, dv, refused := tables["plain"], tables["dv"], tables["refused"]
	if plain.Version == nil || *plain.Version != 2 || plain.Inbox == nil || !plain.Inbox.Writable {
		t.Errorf("plain: %+v, want version 2 with a writable inbox", plain)
	}
	if in := plain.Inbox; in != nil && (in.Commits != 1 || in.Refusals != 1 || len(in.Refused) != 1 || in.Refused[0].Errno != "EINVAL" || in.Refused[0].File != "bad.parquet") {
		t.Errorf("plain inbox: %+v, want 1 commit and the refusal of bad.parquet (EINVAL)", in)
	}
	if dv.Version == nil || dv.Refused != "" {
		t.Errorf("dv: %+v, want a version", dv)
	}
	if refused.Version != nil || !strings.Contains(refused.Refused, "blahabl") {
		t.Errorf("refused: %+v, want the unsupported feature named", refused)
	}
}

// statusDoc is the status file with its mount member decoded.
type statusDoc struct {
	nodes.MountStatus
	Mount mountStatus `json:"mount"`
}

func readStatus(t *testing.T, mnt string) statusDoc {
	t.Helper()
	f, err := os.Open(filepath.Join(mnt, nodes.StatusName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	var st statusDoc
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("status file is not JSON: %v\n%s", err, b)
	}
	return st
}

func TestStatusFileMount(t *testing.T) {
	_, mnt := mountForMetrics(t)
	ents, err := os.ReadDir(mnt)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != nodes.StatusName+" dv plain refused" {
		t.Errorf("root lists %v", names)
	}
	st := readStatus(t, mnt)
	if st.Mount.Mountpoint != mnt || st.Mount.PID != os.Getpid() || len(st.Mount.Sources) != 3 || st.Mount.Cache.DiskLimit != DefaultCacheSize {
		t.Errorf("mount member: %+v", st.Mount)
	}
	if err := os.WriteFile(filepath.Join(mnt, nodes.StatusName), []byte("x"), 0o644); err == nil {
		t.Error("the status file accepted a write")
	}
}
