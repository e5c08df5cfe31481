// Command deltafs mounts Delta Lake tables as directories of snapshots and
// inspects them from the command line.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"ls", "list the live files of a table version", runLs},
		{"history", "list the versions of a table", runHistory},
		{"changes", "print the rows a range of versions inserted, deleted and updated", runChanges},
		{"append", "append Parquet files to a table as one new version", runAppend},
		{"mount", "mount tables as directories of snapshots", runMount},
		{"unmount", "unmount a deltafs mount", runUnmount},
		{"serve", "serve tables over NFSv3, for machines without FUSE (serve nfs)", runServe},
		{"demo", "mount a generated sample table and show what to try", runDemo},
		{"csi", "serve the Kubernetes CSI node plugin", runCSI},
	}
}

const usage = `deltafs: Delta Lake tables as directories of snapshots.

Usage:
  deltafs <command> [flags] [arguments]

Commands:
%s
Examples:
  deltafs demo                                   # a sample table mounted at ./demo/mnt
  deltafs mount ./warehouse /mnt/delta           # every table under ./warehouse
  deltafs ls ./warehouse/orders@v3 --json        # live files of a version
  deltafs history ./warehouse/orders             # versions, times, operations
  deltafs append ./warehouse/orders new.parquet  # commit files as one new version
  deltafs unmount /mnt/delta

Run 'deltafs <command> --help' for a command's flags and examples. Installed
as mount.fuse.deltafs (a symlink), it is mount(8)'s helper for fstab lines
of type fuse.deltafs (see 'deltafs mount --help').
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if filepath.Base(os.Args[0]) == fstabHelperName {
		os.Exit(runFstab(ctx, os.Args[1:]))
	}
	stopProfile := startProfile(os.Getenv("DELTAFS_CPUPROFILE"))
	heapProfileOnSignal(os.Getenv("DELTAFS_MEMPROFILE"))
	code := run(ctx, os.Args[1:])
	stopProfile()
	os.Exit(code)
}

// startProfile writes a CPU profile of the run to path when it is set (for
// developers: DELTAFS_CPUPROFILE=cpu.out deltafs ls ...).
func startProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "deltafs: DELTAFS_CPUPROFILE:", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// heapProfileOnSignal writes a heap profile (after a GC) to path each time
// the process gets SIGUSR1, when path is set (for developers:
// DELTAFS_MEMPROFILE=heap.out deltafs mount ...; kill -USR1 PID; go tool
// pprof -sample_index=inuse_space heap.out).
func heapProfileOnSignal(path string) {
	if path == "" {
		return
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	go func() {
		for range c {
			runtime.GC()
			f, err := os.Create(path)
			if err == nil {
				err = pprof.WriteHeapProfile(f)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "deltafs: DELTAFS_MEMPROFILE:", err)
			}
		}
	}()
}

func run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		printUsage(os.Stderr)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(os.Stdout)
		return 0
	}
	if args[0] == "--version" || args[0] == "version" {
		fmt.Print(buildVersion())
		return 0
	}
	if args[0] == manCommand {
		return runManPage(ctx, args[1:])
	}
	for _, c := range commands {
		if c.name == args[0] {
			if err := c.run(ctx, args[1:]); err != nil {
				if err == errHelp {
					return 0
				}
				if errors.Is(err, errUsage) {
					return 2 // what is wrong is printed, with the usage
				}
				fmt.Fprintf(os.Stderr, "deltafs %s: %v\n", c.name, err)
				return 1
			}
			return 0
		}
	}
	fmt.Fprintf(os.Stderr, "deltafs: unknown command %q\n\n", args[0])
	printUsage(os.Stderr)
	return 2
}

func printUsage(w io.Writer) {
	list := ""
	for _, c := range commands {
		list += fmt.Sprintf("  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, usage, list)
}
