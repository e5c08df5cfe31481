// Command globbench measures what a plain reader pays for a snapshot of
// many files: `ls -lR`, `find` and a DuckDB count over @latest/**/*.parquet,
// each on a fresh mount, with deltafs serving every file in the snapshot's
// schema (partition columns in the directory names, and in the files with
// --partition-columns) against a baseline binary given as DELTAFS_BASE_BIN
// (the build before schema serving), in the same run.
//
// Usage: go run ./bench/globbench (from the repo root, after make build)
//
//	DELTAFS_BIN       deltafs under test (default bin/deltafs)
//	DELTAFS_BASE_BIN  the baseline deltafs (required)
//	GLOBBENCH_FILES   files in the snapshot (default 100000)
//	GLOBBENCH_DIR     where the table and mountpoints go (default bench/out/glob)
//	DELTAFS_BENCH_TRIALS  trials per figure, the median is reported (default 3)
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/bench/internal/report"
	"github.com/deltafs/deltafs/internal/testkit/globtable"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "globbench:", err)
		os.Exit(1)
	}
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run() error {
	bin, base := env("DELTAFS_BIN", "bin/deltafs"), os.Getenv("DELTAFS_BASE_BIN")
	if base == "" {
		return fmt.Errorf("DELTAFS_BASE_BIN must name the baseline deltafs binary")
	}
	n, _ := strconv.Atoi(env("GLOBBENCH_FILES", "100000"))
	trials, _ := strconv.Atoi(env("DELTAFS_BENCH_TRIALS", "3"))
	work, _ := filepath.Abs(env("GLOBBENCH_DIR", "bench/out/glob"))
	table := filepath.Join(work, fmt.Sprintf("table-%d", n))
	if err := globtable.Generate(globtable.Spec{Dir: table, Files: n}); err != nil {
		return err
	}
	// The figures are warm: the table's files in the page cache, as after
	// generating them. Without this, a run after other work finds some of
	// them evicted, and only the builds that read footers pay for it.
	if err := readAll(table); err != nil {
		return err
	}
	nodeDir, _ := filepath.Abs(filepath.Join(env("DELTAFS_TOOLS", ".tools"), "node"))
	script, _ := filepath.Abs(filepath.Join("scripts", "duckdb-query.mjs"))
	fmt.Printf("globbench: %d files, %d trials, load %s\n", n, trials, report.LoadAvg())
	type variant struct {
		name, bin string
		flags     []string
	}
	variants := []variant{{"baseline", base, nil}, {"schema", bin, nil}, {"schema+partitions", bin, []string{"--partition-columns"}}}
	figures := []struct {
		name string
		cmd  func(mnt string) *exec.Cmd
	}{
		{"ls -lR @latest", func(m string) *exec.Cmd { return exec.Command("ls", "-lR", filepath.Join(m, "t", "@latest")+"/") }},
		{"find @latest -name '*.parquet'", func(m string) *exec.Cmd {
			return exec.Command("find", filepath.Join(m, "t", "@latest")+"/", "-name", "*.parquet")
		}},
		{"DuckDB count(*) of @latest/**/*.parquet", func(m string) *exec.Cmd {
			sql := fmt.Sprintf(`["SELECT count(*) FROM read_parquet('%s', hive_partitioning = false)"]`, filepath.Join(m, "t", "@latest", "**", "*.parquet"))
			c := exec.Command("node", script)
			c.Dir, c.Stdin = nodeDir, strings.NewReader(sql)
			return c
		}},
	}
	for _, f := range figures {
		// The variants take turns, each trial in another order: this VM's
		// speed drifts by 20-40% over minutes, which consecutive trials of one
		// variant would read as that variant's cost.
		ds := make([][]time.Duration, len(variants))
		for trial := range trials {
			for k := range variants {
				i := (k + trial) % len(variants)
				v := variants[i]
				d, out, err := timed(work, v.bin, v.flags, table, f.cmd)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", f.name, v.name, err)
				}
				if strings.Contains(out, `"error"`) {
					return fmt.Errorf("%s, %s: %s", f.name, v.name, out)
				}
				ds[i] = append(ds[i], d)
			}
		}
		var times []time.Duration
		for _, d := range ds {
			times = append(times, report.Median(d))
		}
		fmt.Printf("%-42s baseline %8s  schema %8s (%.2fx)  +partitions %8s (%.2fx)  target <= 1.2x\n", f.name,
			report.Round(times[0]), report.Round(times[1]), ratio(times[1], times[0]), report.Round(times[2]), ratio(times[2], times[0]))
	}
	return nil
}

// readAll reads every file under dir once.
func readAll(dir string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		_, err = os.ReadFile(p)
		return err
	})
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(max(b, 1)) }

// timed mounts table with bin and flags on a fresh mountpoint, runs cmd's
// command once, unmounts, and returns the command's wall time and output.
func timed(work, bin string, flags []string, table string, cmd func(string) *exec.Cmd) (time.Duration, string, error) {
	mnt, err := os.MkdirTemp(work, "mnt-")
	if err != nil {
		return 0, "", err
	}
	defer os.Remove(mnt)
	cache, err := os.MkdirTemp(work, "cache-")
	if err != nil {
		return 0, "", err
	}
	defer os.RemoveAll(cache)
	args := append([]string{"mount", "--read-only", "--cache-dir", cache}, flags...)
	m := exec.Command(bin, append(args, "t="+table, mnt)...)
	m.Stderr = os.Stderr
	if err := m.Start(); err != nil {
		return 0, "", err
	}
	defer func() {
		m.Process.Signal(syscall.SIGTERM)
		m.Wait()
	}()
	for i := 0; ; i++ {
		var st syscall.Statfs_t
		if syscall.Statfs(mnt, &st) == nil && st.Type == 0x65735546 {
			if _, err := os.Stat(filepath.Join(mnt, "t", "@latest")); err == nil {
				break
			}
		}
		if i > 600 {
			return 0, "", fmt.Errorf("mount of %s did not come up", table)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c := cmd(mnt)
	var out, stderr bytes.Buffer
	c.Stdout, c.Stderr = &out, &stderr
	start := time.Now()
	err = c.Run()
	d := time.Since(start)
	if err != nil {
		return 0, "", fmt.Errorf("%v: %v: %s", c.Args, err, stderr.String())
	}
	return d, out.String(), nil
}
