//go:build linux

// Command objstorebench measures a deltafs mount of tables in S3 (a local
// versitygw, started here) against direct reads of the same objects with
// gocloud's S3 reader, and prints every figure as a ratio to a baseline
// measured in the same run, with the object-storage issue's targets:
//
//   - sequential read of one large object through the mount (fresh mount,
//     1 MiB reads) vs one ranged GET of the whole object (target >= 0.8x
//     the GET's throughput), and the time to first byte of each;
//   - the same read from a store that behaves like a remote one (wan): a
//     throttling proxy adds a time to first byte to every request and caps
//     each connection's throughput, as a real S3 endpoint does per stream;
//   - `find` over a 10,000-file snapshot of an S3 table, cold (fresh
//     mount: includes loading the snapshot from S3) and warm, vs `find`
//     over the same tree of empty files on the local disk;
//   - the first `ls TABLE` of a table with a long history behind the
//     throttle (history).
//
// It needs /dev/fuse, root (or fusermount3) and versitygw (make
// tools-servers); without them it says so and exits 0.
//
// Environment:
//
//	DELTAFS_BENCH_LARGE=1      the size: a 256 MiB object
//	DELTAFS_BENCH_OBJ_MIB=64   size of the sequentially read object
//	DELTAFS_BENCH_FILES=10000  files of the `find` snapshot
//	DELTAFS_BENCH_TRIALS=3     trials per figure (median)
//	DELTAFS_BENCH_ONLY=seq,wan,find,history  the benchmarks to run
//	DELTAFS_BENCH_HISTORY_COMMITS=10000  commits of the history table (the issue's: 100000)
//	DELTAFS_BENCH_WAN_MIB=64   size of the object read through the throttle (wan)
//	DELTAFS_BENCH_STREAM_MIBS=100  throttle: MiB/s per connection
//	DELTAFS_BENCH_LATENCY_MS=20    throttle: delay before each request reaches the server
//	DELTAFS_BENCH_CPUPROFILE     write a CPU profile of the run (the mounts run in this process)
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/deltafs/deltafs/bench/internal/report"
)

// options are the benchmark's settings, from the environment.
type options struct {
	objBytes      int64
	wanBytes      int64         // object read through the throttle
	streamMiBs    int           // throttle: MiB/s per connection
	latency       time.Duration // throttle: delay before each request reaches the server
	files, trials int
	only          map[string]bool
	work          string
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func loadOptions() options {
	mib := 64
	if os.Getenv("DELTAFS_BENCH_LARGE") == "1" {
		mib = 256
	}
	o := options{
		objBytes:   int64(envInt("DELTAFS_BENCH_OBJ_MIB", mib)) << 20,
		wanBytes:   int64(envInt("DELTAFS_BENCH_WAN_MIB", mib)) << 20,
		streamMiBs: envInt("DELTAFS_BENCH_STREAM_MIBS", 100),
		latency:    time.Duration(envInt("DELTAFS_BENCH_LATENCY_MS", 20)) * time.Millisecond,
		files:      envInt("DELTAFS_BENCH_FILES", 10_000),
		trials:     envInt("DELTAFS_BENCH_TRIALS", 3),
		only:       map[string]bool{},
	}
	only := os.Getenv("DELTAFS_BENCH_ONLY")
	if only == "" {
		only = "seq,wan,find,history"
	}
	for _, b := range strings.Split(only, ",") {
		o.only[strings.TrimSpace(b)] = true
	}
	return o
}

func main() {
	if dir := os.Getenv(indexServerEnv); dir != "" {
		if err := runIndexServer(dir); err != nil {
			fmt.Fprintln(os.Stderr, "objstorebench index server:", err)
			os.Exit(1)
		}
		return
	}
	if spec := os.Getenv(throttleEnv); spec != "" {
		if err := runThrottleChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "objstorebench throttle:", err)
			os.Exit(1)
		}
		return
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fmt.Println("objstorebench: skipped: no /dev/fuse")
		return
	}
	bin := findVersitygw()
	if bin == "" {
		fmt.Println("objstorebench: skipped: versitygw not installed (make tools-servers)")
		return
	}
	if p := os.Getenv("DELTAFS_BENCH_CPUPROFILE"); p != "" {
		stop, err := startProfile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "objstorebench:", err)
			os.Exit(1)
		}
		defer stop()
	}
	if err := run(loadOptions(), bin); err != nil {
		fmt.Fprintln(os.Stderr, "objstorebench:", err)
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

func run(o options, versitygw string) error {
	dir, err := os.MkdirTemp("", "deltafs-objstorebench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	o.work = dir
	srv, err := startS3(versitygw, dir)
	if err != nil {
		return err
	}
	defer srv.stop()
	fmt.Printf("objstorebench: %d CPUs, load average %s, versitygw at %s\n", runtime.NumCPU(), loadAvg(), srv.addr)
	fmt.Printf("objstorebench: object %d MiB, %d files for find, %d trials\n", o.objBytes>>20, o.files, o.trials)
	var sections []section
	steps := []struct {
		name string
		fn   func(options, *s3Server) ([]section, error)
	}{{"seq", benchSeq}, {"wan", benchWAN}, {"find", benchFind}, {"history", benchHistory}}
	for _, s := range steps {
		if !o.only[s.name] {
			continue
		}
		start := time.Now()
		got, err := s.fn(o, srv)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Printf("objstorebench: %s done in %s\n", s.name, time.Since(start).Round(time.Second))
		sections = append(sections, got...)
	}
	report.Print(os.Stdout, sections)
	fmt.Printf("\nobjstorebench: load average at the end: %s (other processes share these CPUs)\n", loadAvg())
	return nil
}
