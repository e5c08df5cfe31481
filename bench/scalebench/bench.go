package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/bench/internal/report"
	"github.com/deltafs/deltafs/internal/testkit/scalegen"
)

// sizes of the generated tables. "full" is the issue's: 100,000 commits, a
// 1,000,000-file snapshot, 10,000 commits with only the last checkpoint.
// "small" (the default of `make bench`) is a tenth, for a quick look.
type sizes struct {
	historyCommits int   // table "history": 1 add a commit, 10,000 live files, checkpoint every 100
	lastCPCommits  int   // table "lastcp": 10 adds a commit, only the last checkpoint
	millionCommits int   // table "million": 1,000 adds a commit over 1,000 partitions, checkpoint every 100
	sparkCommits   []int // tables "spark-N": Spark's commits (sparkSpec)
}

var sizeSets = map[string]sizes{
	"full":  {historyCommits: 100_000, lastCPCommits: 10_000, millionCommits: 1_000, sparkCommits: []int{10_000, 100_000}},
	"small": {historyCommits: 10_000, lastCPCommits: 2_000, millionCommits: 100, sparkCommits: []int{1_000, 10_000}},
}

type bench struct {
	work     string // generated tables, native baselines, mountpoints
	deltafs  string // the deltafs binary
	trials   int
	sections []report.Section
}

func runBench(args []string) error {
	size := envOr("DELTAFS_SCALE_SIZE", "small")
	sz, ok := sizeSets[size]
	if !ok {
		return fmt.Errorf("DELTAFS_SCALE_SIZE=%s: want small or full", size)
	}
	b := &bench{work: envOr("DELTAFS_SCALE_DIR", "bench/out/scale-"+size), deltafs: envOr("DELTAFS_BIN", "bin/deltafs")}
	b.trials, _ = strconv.Atoi(envOr("DELTAFS_BENCH_TRIALS", "3"))
	only := os.Getenv("DELTAFS_BENCH_ONLY")
	if err := os.MkdirAll(b.work, 0o755); err != nil {
		return err
	}
	fmt.Printf("scalebench: size %s, tables under %s, %d trials, load %s\n", size, b.work, b.trials, report.LoadAvg())
	var history, lastcp, million *genTable
	var err error
	if uses(only, "versions", "lslr", "history", "version") {
		history, err = b.table("history", scalegen.Spec{Commits: sz.historyCommits, FilesPerCommit: 1, CheckpointEvery: 100,
			KeepCheckpoints: true, MaxLive: 10_000, ICT: true})
		if err != nil {
			return err
		}
	}
	if uses(only, "versions-lastcp", "lastcp", "cli") {
		lastcp, err = b.table("lastcp", scalegen.Spec{Commits: sz.lastCPCommits, FilesPerCommit: 10, MaxLive: 0, CheckpointEvery: 0})
		if err != nil {
			return err
		}
	}
	if uses(only, "find", "many") {
		million, err = b.table("million", scalegen.Spec{Commits: sz.millionCommits, FilesPerCommit: 1_000, CheckpointEvery: 100,
			KeepCheckpoints: true, Partitions: 1_000})
		if err != nil {
			return err
		}
	}
	var spark []*genTable
	if uses(only, "spark", "spark-cache") {
		for _, n := range sz.sparkCommits {
			t, err := b.table(fmt.Sprintf("spark%d", n), sparkSpec(n))
			if err != nil {
				return err
			}
			spark = append(spark, t)
		}
	}
	steps := []struct {
		name string
		run  func() error
	}{
		{"versions", func() error { return b.versions(history) }},
		{"versions-lastcp", func() error { return b.versions(lastcp) }},
		{"lslr", func() error { return b.lsLR("history", history) }},
		{"history", func() error { return b.historyStat(history) }},
		{"version", func() error { return b.oneVersion("history", history, 5) }},
		{"lastcp", func() error { return b.oneVersion("lastcp", lastcp, 3) }},
		{"cli", func() error { return b.cliLs(lastcp) }},
		{"find", func() error { return b.find(million) }},
		{"many", func() error { return b.manyVersions(million, 20) }},
		{"spark", func() error { return b.each(spark, b.sparkVersions) }},
		{"spark-cache", func() error { return b.sparkCache(spark[0]) }},
	}
	for _, s := range steps {
		if !uses(only, s.name) {
			continue
		}
		if err := s.run(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	report.Print(os.Stdout, b.sections)
	fmt.Printf("load at the end: %s\n", report.LoadAvg())
	return nil
}

// each runs fig on every table of ts.
func (b *bench) each(ts []*genTable, fig func(*genTable) error) error {
	for _, t := range ts {
		if err := fig(t); err != nil {
			return err
		}
	}
	return nil
}

// uses says whether DELTAFS_BENCH_ONLY (only, comma-separated; "" is
// every step) selects one of the steps (the tables a step needs are
// generated only then).
func uses(only string, steps ...string) bool {
	for _, s := range steps {
		if only == "" || strings.Contains(","+only+",", ","+s+",") {
			return true
		}
	}
	return false
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// genTable is a generated table and what the generator said of it.
type genTable struct {
	dir string
	res *scalegen.Result
}

// table generates the named table once (kept across runs, keyed by spec).
func (b *bench) table(name string, s scalegen.Spec) (*genTable, error) {
	key := fmt.Sprintf("%s-%d-%d-%d-%v-%d-%d-%v", name, s.Commits, s.FilesPerCommit, s.CheckpointEvery, s.KeepCheckpoints, s.MaxLive, s.Partitions, s.ICT)
	if s.Spark {
		key += fmt.Sprintf("-spark-%d-%d", s.DeleteEvery, s.DeleteFiles)
	}
	s.Dir = filepath.Join(b.work, key)
	done := filepath.Join(b.work, key+".done")
	if _, err := os.Stat(done); err != nil {
		os.RemoveAll(s.Dir)
		start := time.Now()
		res, err := scalegen.Generate(s)
		if err != nil {
			return nil, err
		}
		fmt.Printf("  generated %s: %d versions, %d live files in %s\n", name, res.Latest+1, res.LiveFiles, time.Since(start).Round(time.Millisecond))
		if err := os.WriteFile(done, []byte(strings.Join(res.Paths, "\n")), 0o644); err != nil {
			return nil, err
		}
		return &genTable{dir: s.Dir, res: res}, nil
	}
	data, err := os.ReadFile(done)
	if err != nil {
		return nil, err
	}
	res := &scalegen.Result{Latest: int64(s.Commits - 1), Paths: strings.Split(string(data), "\n")}
	res.LiveFiles = len(res.Paths)
	return &genTable{dir: s.Dir, res: res}, nil
}

// mounted is a deltafs mount run as its own process, as a user runs it.
type mounted struct {
	cmd *exec.Cmd
	mnt string
}

// mount starts `deltafs mount t=DIR MNT` and waits until t/ is served.
func (b *bench) mount(dir string, extra ...string) (*mounted, error) {
	return b.mountWith(b.deltafs, dir, extra...)
}

// mountWith is mount with the deltafs binary bin.
func (b *bench) mountWith(bin, dir string, extra ...string) (*mounted, error) {
	mnt, err := os.MkdirTemp(b.work, "mnt-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"mount", "--read-only"}, extra...)
	args = append(args, "t="+dir, mnt)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m := &mounted{cmd: cmd, mnt: mnt}
	for i := 0; i < 600; i++ {
		var st syscall.Statfs_t
		if syscall.Statfs(mnt, &st) == nil && st.Type == 0x65735546 { // FUSE_SUPER_MAGIC
			if _, err := os.Stat(filepath.Join(mnt, "t")); err == nil {
				return m, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.close()
	return nil, fmt.Errorf("mount of %s did not come up", dir)
}

func (m *mounted) close() {
	m.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		m.cmd.Process.Kill()
		<-done
		exec.Command("fusermount3", "-u", "-z", m.mnt).Run()
	}
	os.Remove(m.mnt)
}

// rss returns the mount process's resident and peak resident set (bytes).
func (m *mounted) rss() (cur, peak int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "VmHWM:") {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			if f[0] == "VmRSS:" {
				cur = kb << 10
			} else {
				peak = kb << 10
			}
		}
	}
	return cur, peak
}

// run runs a command, discarding its output, and returns its wall time
// and peak RSS (bytes). The peak is GNU time's (%M): the rusage of a
// child forked from this process counts this process's pages from before
// the exec, which would make every child look as big as the benchmark.
func run(name string, args ...string) (time.Duration, int64, error) {
	var cmd *exec.Cmd
	var rssFile string
	if timeBin != "" {
		f, err := os.CreateTemp("", "scalebench-rss-")
		if err != nil {
			return 0, 0, err
		}
		rssFile = f.Name()
		f.Close()
		defer os.Remove(rssFile)
		cmd = exec.Command(timeBin, append([]string{"-f", "%M", "-o", rssFile, name}, args...)...)
	} else {
		cmd = exec.Command(name, args...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return d, 0, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	var peak int64
	if rssFile != "" {
		data, _ := os.ReadFile(rssFile)
		kb, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		peak = kb << 10
	} else if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		peak = ru.Maxrss << 10
	}
	return d, peak, nil
}

// timeBin is GNU time, when installed (apt-get install time).
var timeBin = func() string {
	if _, err := os.Stat("/usr/bin/time"); err == nil {
		return "/usr/bin/time"
	}
	return ""
}()

func dropCaches() {
	syscall.Sync()
	os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0)
}

// dropDentries drops the kernel's dentries and inodes but not the page
// cache: a "first" listing with the data (the log, a directory's blocks)
// still cached, as on a machine that has read them before.
func dropDentries() {
	os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func ms(d time.Duration) string { return report.Round(d) }

func ratio(a, b time.Duration) float64 { return float64(a) / float64(max(b, 1)) }

// randomVersions picks n distinct versions in [0, latest], seeded.
func randomVersions(latest int64, n int, seed uint64) []int64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	seen := map[int64]bool{}
	var out []int64
	for len(out) < n && int64(len(out)) <= latest {
		v := rng.Int64N(latest + 1)
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
