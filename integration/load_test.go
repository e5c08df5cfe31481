package integration

// Load: a `deltafs mount` process serves 16 readers doing random and
// sequential reads over the files of many @vN directories while an
// appender drops a Parquet file into an inbox every second. Every byte
// read is checked; the mount's resident memory is sampled every 100 ms
// and must stay under the memory cache budget plus a fixed overhead.
//
// Two tables are mounted by the one process: a local copy of a fixture
// (plain files served from the local file, through kernel passthrough when
// 1 MiB or more; DV'd files rewritten into the disk cache) and, when
// versitygw is installed, the same fixture in an S3 bucket (every read
// through the memory block cache, the budget under test). TestLoad is the
// short version; TestLoadSoak (build tag soak, `make soak`) runs minutes.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// loadPlan sizes one load run.
type loadPlan struct {
	duration    time.Duration // of the read load (env DELTAFS_LOAD_DURATION overrides)
	readers     int
	localFiles  int    // generated files appended to the local table before the mount, a version each
	s3Files     int    // the same for the S3 table
	fileBytes   int64  // approximate size of each of them
	appendBytes int64  // approximate size of each file dropped into an inbox during the load
	cacheSize   string // --cache-size: the disk cache of rewritten files
}

// shortLoad is the `make test` version: tens of MiB, about 30 s of load.
var shortLoad = loadPlan{duration: 25 * time.Second, readers: 16, localFiles: 4, s3Files: 6,
	fileBytes: 4 << 20, appendBytes: 512 << 10, cacheSize: "64M"}

const (
	// loadMemoryBudget is the memory block cache budget of the mount:
	// mount.Config.MemoryCacheSize left at its default (blobcache.DefaultMemoryBytes),
	// because `deltafs mount` has no flag to set it.
	loadMemoryBudget = 256 << 20
	// loadOverhead is the resident memory allowed beyond loadMemoryBudget.
	// The mount sets a soft Go memory limit of the budgets + 160 MiB
	// (cmd/deltafs/memlimit.go); under the soak load its RSS peaked 234 MiB
	// over the budget (about 100 MiB of it live heap beyond the cache: FUSE
	// buffers, fetches in flight, inodes). 320 MiB leaves ~85 MiB of margin
	// and still fails a mount whose GC runs without the limit (it peaked at
	// 1 GiB: the heap grows to twice the live heap). docs/reliability.md
	// ("Load") has the figures.
	loadOverhead = 320 << 20
	// loadCacheSlack is how far the cache gauge may read over its budget:
	// a scrape can fall between a block's insertion and the eviction it
	// triggers (one block, blobcache.DefaultBlockSize).
	loadCacheSlack = 1 << 20
	// loadReadMax bounds the length of one random read.
	loadReadMax = 256 << 10
)

func TestLoad(t *testing.T) { runLoad(t, shortLoad) }

// loadRow is a row of the DV fixture's data files (part is a partition column).
type loadRow struct {
	Col1 *int32  `parquet:"col1,optional"`
	Col2 *string `parquet:"col2,optional"`
}

// loadTable is one mounted table and where its bytes are on local disk.
type loadTable struct {
	name     string       // directory in the mount
	url      string       // mount source
	dir      string       // the table's files on local disk (the copy, or the bucket's directory)
	engine   *delta.Table // reads dir, to list each version's live files
	before   int64        // latest version when the load started
	appended atomic.Int64 // inbox appends acknowledged during the load
}

// runLoad runs plan and reports its figures.
func runLoad(t *testing.T, plan loadPlan) {
	testenv.RequireFUSE(t)
	if d, err := time.ParseDuration(os.Getenv("DELTAFS_LOAD_DURATION")); err == nil {
		plan.duration = d
	}
	bin := buildDeltafs(t)
	tables := loadTables(t, bin, plan)
	m := startLoadMount(t, bin, plan, tables)
	r := newLoadRun(m.dir, plan)
	for _, tb := range tables {
		if err := r.targets.addTable(context.Background(), m.dir, tb); err != nil {
			t.Fatal(err)
		}
	}
	idle := m.sampler.rss()
	t.Logf("mount ready: %d targets over %d tables, idle RSS %s", r.targets.len(), len(tables), mib(idle))
	start := time.Now()
	err := r.run(tables)
	elapsed := time.Since(start)
	m.sampler.stop()
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	m.stop(t)
	checkAppends(t, tables)
	reportLoad(t, plan, r, m.sampler, idle, elapsed, tables)
}

// buildDeltafs builds cmd/deltafs into a temp dir (without -race: the
// memory measured is the shipped binary's).
func buildDeltafs(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "deltafs")
	build := exec.Command("go", "build", "-o", bin, "github.com/deltafs/deltafs/cmd/deltafs")
	build.Dir = testenv.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// loadTables prepares the tables: copies of the DV fixture, local and (if
// versitygw is installed) in S3, each grown by generated files appended
// with `deltafs append`, one version per file.
func loadTables(t *testing.T, bin string, plan loadPlan) []*loadTable {
	t.Helper()
	local := testenv.CopyFixture(t, fixtureDV)
	tables := []*loadTable{{name: "local", url: local, dir: local}}
	if s3 := loadS3(t); s3 != nil {
		testenv.UploadDir(t, s3.URL, "load/t", local)
		tables = append(tables, &loadTable{name: "s3", url: s3.BucketURL("load/t"), dir: filepath.Join(s3.BucketDir, "load", "t")})
	}
	for _, tb := range tables {
		n := plan.localFiles
		if tb.name == "s3" {
			n = plan.s3Files
		}
		for i := range n {
			appendGenerated(t, bin, tb.url, i, plan.fileBytes)
		}
		st, err := blobstore.Open(context.Background(), tb.dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		tb.engine = delta.Open(st, delta.Options{})
	}
	return tables
}

// loadS3 starts versitygw, or returns nil when it is not installed (the
// local table still runs; with DELTAFS_REQUIRE_ALL=1 the test fails).
func loadS3(t *testing.T) *testenv.Server {
	t.Helper()
	if _, err := os.Stat(filepath.Join(testenv.ToolsDir(t), "bin", "versitygw")); err != nil {
		if _, err := exec.LookPath("versitygw"); err != nil {
			if testenv.RequireAll() {
				t.Fatalf("versitygw not installed (make tools-servers) and %s is set", testenv.EnvRequireAll)
			}
			t.Log("versitygw not installed: the memory block cache is not under load (make tools-servers)")
			return nil
		}
	}
	return testenv.StartS3(t)
}

// appendGenerated appends one generated file of about size bytes to the
// table at url as partition part=i%10.
func appendGenerated(t *testing.T, bin, url string, i int, size int64) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("part=%d", i%10))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("gen-%d.parquet", i))
	if err := os.WriteFile(path, genParquet(t, uint64(i), size), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "append", url, path).CombinedOutput(); err != nil {
		t.Fatalf("deltafs append %s: %v\n%s", url, err, out)
	}
}

// genParquet returns a Parquet file of about size bytes of pseudo-random
// rows (the same seed gives the same bytes).
func genParquet(t *testing.T, seed uint64, size int64) []byte {
	t.Helper()
	data, err := encodeRows(genRows(seed, size))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// genRows returns about size bytes of pseudo-random rows.
func genRows(seed uint64, size int64) []loadRow {
	rng := rand.New(rand.NewPCG(seed, 0x10ad))
	const strLen = 120
	rows := make([]loadRow, max(size/(strLen+8), 1))
	buf := make([]byte, strLen)
	for i := range rows {
		for j := range buf {
			buf[j] = byte('!' + rng.IntN(94))
		}
		rows[i] = loadRow{Col1: ptr(rng.Int32()), Col2: ptr(string(buf))}
	}
	return rows
}

// encodeRows encodes rows as a Parquet file.
func encodeRows(rows []loadRow) ([]byte, error) {
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[loadRow](&buf)
	if _, err := w.Write(rows); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// loadMount is a running `deltafs mount` process.
type loadMount struct {
	cmd     *exec.Cmd
	dir     string
	sampler *rssSampler
}

// startLoadMount starts `deltafs mount` on the tables with the plan's disk
// cache size and a metrics endpoint, and waits until it says it is ready.
func startLoadMount(t *testing.T, bin string, plan loadPlan, tables []*loadTable) *loadMount {
	t.Helper()
	mnt, addr := t.TempDir(), freeLoopback(t)
	args := []string{"mount", "--cache-dir", t.TempDir(), "--cache-size", plan.cacheSize,
		"--metrics-addr", addr, "--log-level", "warn"}
	for _, tb := range tables {
		args = append(args, tb.name+"="+tb.url)
	}
	cmd := exec.Command(bin, append(args, mnt)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); syscall.Unmount(mnt, syscall.MNT_DETACH) })
	lines := bufio.NewScanner(stderr)
	word := "tables"
	if len(tables) == 1 {
		word = "table"
	}
	want := fmt.Sprintf("deltafs: mounted %d %s at %s", len(tables), word, mnt)
	for lines.Scan() && !strings.Contains(lines.Text(), want) {
		t.Log(lines.Text())
	}
	if lines.Err() != nil || !strings.Contains(lines.Text(), want) {
		t.Fatalf("no %q on stderr", want)
	}
	go func() {
		for lines.Scan() {
			t.Log("deltafs: " + lines.Text())
		}
	}()
	s := startSampler(cmd.Process.Pid, "http://"+addr+"/metrics")
	t.Cleanup(s.stop)
	return &loadMount{cmd: cmd, dir: mnt, sampler: s}
}

// stop unmounts with SIGTERM and checks the process exits cleanly.
func (m *loadMount) stop(t *testing.T) {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Wait(); err != nil {
		t.Errorf("deltafs mount exited with %v after SIGTERM", err)
	}
}

// checkAppends checks that every acknowledged append is exactly one
// version holding one more file, and that the log is contiguous.
func checkAppends(t *testing.T, tables []*loadTable) {
	t.Helper()
	ctx := context.Background()
	for _, tb := range tables {
		hist, err := tb.engine.History(ctx)
		if err != nil {
			t.Fatalf("%s: %v", tb.name, err)
		}
		n := tb.appended.Load()
		if want := tb.before + n + 1; int64(len(hist)) != want {
			t.Errorf("%s: %d versions after %d appends to version %d, want %d", tb.name, len(hist), n, tb.before, want)
		}
		if grown := liveCount(t, tb, tb.before+n) - liveCount(t, tb, tb.before); grown != n {
			t.Errorf("%s: %d live files more after %d appends", tb.name, grown, n)
		}
		if n == 0 {
			t.Errorf("%s: no append landed during the load", tb.name)
		}
	}
}

// liveCount returns the number of live files of version v of tb.
func liveCount(t *testing.T, tb *loadTable, v int64) int64 {
	t.Helper()
	snap, err := tb.engine.Snapshot(context.Background(), v)
	if err != nil {
		t.Fatalf("%s: %v", tb.name, err)
	}
	files, err := snap.LiveFiles()
	if err != nil {
		t.Fatalf("%s version %d: %v", tb.name, v, err)
	}
	return int64(len(files))
}

// mib formats a byte count in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// reportLoad logs the figures and fails when resident memory went over
// the budget plus the fixed overhead.
func reportLoad(t *testing.T, plan loadPlan, r *loadRun, s *rssSampler, idle int64, d time.Duration, tables []*loadTable) {
	t.Helper()
	appends := ""
	for _, tb := range tables {
		appends += fmt.Sprintf(" %s=%d", tb.name, tb.appended.Load())
	}
	secs := d.Seconds()
	t.Logf("load %v, %d readers, %d targets: %d opens, %d reads (%.0f/s), %s read (%.1f MiB/s); appends landed:%s",
		d.Round(time.Second), plan.readers, r.targets.len(), r.opens.Load(), r.reads.Load(),
		float64(r.reads.Load())/secs, mib(r.bytes.Load()), float64(r.bytes.Load())/(1<<20)/secs, appends)
	g := s.atMax
	t.Logf("RSS: idle %s, max sampled %s (%d samples), VmHWM %s; memory cache: max %s held, %s at max RSS; overhead over the cache at max RSS %s",
		mib(idle), mib(s.maxRSS), s.samples, mib(s.hwm), mib(s.maxCache), mib(g[cacheGauge]), mib(s.maxRSS-g[cacheGauge]))
	t.Logf("Go runtime at max RSS: heap in use %s, heap idle %s (released %s), sys %s",
		mib(g[heapGauge]), mib(g[heapIdleGauge]), mib(g[releasedGauge]), mib(g[sysGauge]))
	t.Logf("budgets: memory cache %s (default, no flag), disk cache --cache-size %s; allowed RSS %s",
		mib(loadMemoryBudget), plan.cacheSize, mib(loadMemoryBudget+loadOverhead))
	if peak := max(s.maxRSS, s.hwm); peak > loadMemoryBudget+loadOverhead {
		t.Errorf("peak RSS %s over the memory cache budget %s + overhead %s", mib(peak), mib(loadMemoryBudget), mib(loadOverhead))
	}
	if s.maxCache > loadMemoryBudget+loadCacheSlack {
		t.Errorf("memory cache held %s, over its budget %s", mib(s.maxCache), mib(loadMemoryBudget))
	}
}

// freeLoopback returns a free 127.0.0.1 port address.
func freeLoopback(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// rssSampler samples a process's resident memory (VmRSS) every 100 ms and
// the mount's memory cache gauge every 500 ms. Its figures are read after
// stop.
type rssSampler struct {
	pid     int
	metrics string // URL of the Prometheus metrics
	last    atomic.Int64
	done    chan struct{}
	stopped chan struct{}
	once    sync.Once

	samples               int
	maxRSS, hwm, maxCache int64            // bytes
	atMax                 map[string]int64 // the gauges last scraped before maxRSS was sampled
}

func startSampler(pid int, metricsURL string) *rssSampler {
	s := &rssSampler{pid: pid, metrics: metricsURL, done: make(chan struct{}), stopped: make(chan struct{})}
	rss, _ := procStatus(pid, "VmRSS")
	s.last.Store(rss)
	go s.loop()
	return s
}

// rss returns the latest sample.
func (s *rssSampler) rss() int64 { return s.last.Load() }

func (s *rssSampler) loop() {
	defer close(s.stopped)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var gauges map[string]int64
	for i := 0; ; i++ {
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
		if i%5 == 0 {
			if g, err := scrapeGauges(s.metrics); err == nil {
				gauges, s.maxCache = g, max(s.maxCache, g[cacheGauge])
			}
		}
		rss, err := procStatus(s.pid, "VmRSS")
		if err != nil {
			continue
		}
		s.samples++
		s.last.Store(rss)
		if rss > s.maxRSS {
			s.maxRSS, s.atMax = rss, gauges
		}
	}
}

// stop ends the sampling and reads the process's peak RSS (VmHWM), which
// also counts peaks between samples. Call it before the process exits.
func (s *rssSampler) stop() {
	s.once.Do(func() {
		close(s.done)
		<-s.stopped
		s.hwm, _ = procStatus(s.pid, "VmHWM")
	})
}

// procStatus returns a "kB" field of /proc/PID/status in bytes.
func procStatus(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// Gauges of the mount's metrics kept at the sample of the highest RSS.
const (
	cacheGauge    = "deltafs_cache_memory_bytes"      // blocks held by the memory cache
	heapGauge     = "go_memstats_heap_inuse_bytes"    // Go heap spans in use
	heapIdleGauge = "go_memstats_heap_idle_bytes"     // Go heap spans free, returned to the OS or not
	releasedGauge = "go_memstats_heap_released_bytes" // of which returned to the OS
	sysGauge      = "go_memstats_sys_bytes"           // all memory the Go runtime got from the OS
)

// scrapeGauges returns the values of the unlabelled metrics above at url.
func scrapeGauges(url string) (map[string]int64, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]int64{}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		name, v, _ := strings.Cut(lines.Text(), " ")
		switch name {
		case cacheGauge, heapGauge, heapIdleGauge, releasedGauge, sysGauge:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", lines.Text(), err)
			}
			out[name] = int64(f)
		}
	}
	if _, ok := out[cacheGauge]; !ok {
		return nil, fmt.Errorf("no %s at %s", cacheGauge, url)
	}
	return out, lines.Err()
}
