//go:build linux

// Command mountbench measures a deltafs mount against native reads and
// go-fuse's loopback on generated tables, and prints every figure as a
// ratio to a baseline measured in the same run, with the targets of the
// mount issue. It needs root (dropping caches, FUSE passthrough, direct
// mounts) and /dev/fuse; without them it says so and exits 0.
//
// Environment (sizes in MiB):
//
//	DELTAFS_BENCH_LARGE=1        the sizes: 1024 MiB sequential, 256 MiB DV'd file
//	DELTAFS_BENCH_SEQ_MIB=256    size of the sequentially read file
//	DELTAFS_BENCH_DV_MIB=64      size of the DV'd Parquet file (8 row groups)
//	DELTAFS_BENCH_FILES=10000    files of the `ls -l` snapshot
//	DELTAFS_BENCH_TRIALS=3       trials per cold/first-read figure (median)
//	DELTAFS_BENCH_OPENS=2000     timed open+read+close rounds per config
//	DELTAFS_BENCH_ONLY=seq,dv,ls,open,nfs,nfsmem  the benchmarks to run
//	DELTAFS_BENCH_MEM_ENTRIES=100000  entries of the nfsmem listings
//	DELTAFS_BENCH_DIR            where to generate (default: a temp dir, removed)
//	DELTAFS_BENCH_DELTAFS        a deltafs binary: the first reads (sequential, DV) also through a mount process of their own
//	DELTAFS_BENCH_CPUPROFILE     write a CPU profile of the run (the FUSE servers run in this process)
//
// With DELTAFS_BENCH_DELTAFS, the sequential first reads are also timed through go-fuse's
// loopback in a process of its own, which this binary serves when run as
// "mountbench loopback-serve SRC MNT".
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/bench/internal/report"
)

// options are the benchmark's settings, from the environment.
type options struct {
	seqBytes, dvBytes    int64
	files, trials, opens int
	lsRuns               int
	only                 map[string]bool
	work                 string
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func loadOptions() options {
	seq, dv := 256, 64
	if os.Getenv("DELTAFS_BENCH_LARGE") == "1" {
		seq, dv = 1024, 256
	}
	o := options{
		seqBytes: int64(envInt("DELTAFS_BENCH_SEQ_MIB", seq)) << 20,
		dvBytes:  int64(envInt("DELTAFS_BENCH_DV_MIB", dv)) << 20,
		files:    envInt("DELTAFS_BENCH_FILES", 10_000),
		trials:   envInt("DELTAFS_BENCH_TRIALS", 3),
		opens:    envInt("DELTAFS_BENCH_OPENS", 2000),
		lsRuns:   5,
		only:     map[string]bool{},
		work:     os.Getenv("DELTAFS_BENCH_DIR"),
	}
	only := os.Getenv("DELTAFS_BENCH_ONLY")
	if only == "" {
		only = "seq,dv,ls,open,nfs,nfsmem"
	}
	for _, b := range strings.Split(only, ",") {
		o.only[strings.TrimSpace(b)] = true
	}
	return o
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == loopbackServe { // a fresh process's loopback (loopbackFreshRead)
		if err := serveLoopback(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "mountbench:", err)
			os.Exit(1)
		}
		return
	}
	if os.Geteuid() != 0 {
		fmt.Println("mountbench: skipped: needs root (drop_caches, FUSE passthrough)")
		return
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fmt.Println("mountbench: skipped: no /dev/fuse")
		return
	}
	if p := os.Getenv("DELTAFS_BENCH_CPUPROFILE"); p != "" {
		stop, err := startProfile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mountbench:", err)
			os.Exit(1)
		}
		defer stop()
	}
	if err := run(loadOptions()); err != nil {
		fmt.Fprintln(os.Stderr, "mountbench:", err)
		os.Exit(1) //nolint:gocritic // the profile of a failed run is not wanted
	}
}

// startProfile starts a CPU profile written to path; stop ends it.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func run(o options) error {
	if o.work == "" {
		dir, err := os.MkdirTemp("", "deltafs-mountbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.work = dir
	}
	var uts unix.Utsname
	unix.Uname(&uts)
	fmt.Printf("mountbench: kernel %s, %d CPUs, load average %s, work dir %s\n",
		unix.ByteSliceToString(uts.Release[:]), runtime.NumCPU(), loadAvg(), o.work)
	fmt.Printf("mountbench: sequential file %d MiB, DV'd file ~%d MiB, %d files for ls, %d trials, %d opens\n",
		o.seqBytes>>20, o.dvBytes>>20, o.files, o.trials, o.opens)
	var sections []section
	steps := []struct {
		name string
		fn   func(options) ([]section, error)
	}{{"seq", benchSeq}, {"dv", benchDV}, {"ls", benchLs}, {"open", benchOpen}, {"nfs", benchNFS}, {"nfsmem", benchNFSMem}}
	for _, s := range steps {
		if !o.only[s.name] {
			continue
		}
		start := time.Now()
		got, err := s.fn(o)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Printf("mountbench: %s done in %s\n", s.name, time.Since(start).Round(time.Second))
		sections = append(sections, got...)
	}
	report.Print(os.Stdout, sections)
	fmt.Printf("\nmountbench: load average at the end: %s (other processes share these CPUs)\n", loadAvg())
	return nil
}

// generated returns root and whether the table there was already written
// by an earlier run into the same DELTAFS_BENCH_DIR with the same key.
func generated(o options, name string) (root string, done bool) {
	root = filepath.Join(o.work, name)
	_, err := os.Stat(filepath.Join(root, "_delta_log"))
	return root, err == nil
}
