package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/deltafs/deltafs/internal/sample"
	"github.com/deltafs/deltafs/mount"
)

const demoHelp = `Generate a small sample Delta table (DIR/orders: appends, a partitioned
layout, a DELETE stored as deletion vectors, a checkpoint, versions one day
apart), mount it at DIR/mnt, print what to try, and serve it until Ctrl-C
(SIGINT or SIGTERM unmount cleanly). An existing DIR/orders is reused
unless --fresh is given.

Needs FUSE: /dev/fuse, and either root or fusermount3 (apt-get install fuse3).

Examples:
  deltafs demo
  deltafs demo --dir /tmp/deltafs-demo --fresh
`

// demoReady is the line printed once the mount serves the sample.
const demoReady = "deltafs demo: ready"

func runDemo(ctx context.Context, args []string) error {
	flags := newFlags("demo", "", demoHelp)
	dir := flags.String("dir", "demo", "directory for the sample table (DIR/orders), the mountpoint (DIR/mnt) and the cache")
	fresh := flags.Bool("fresh", false, "regenerate DIR/orders even if it exists")
	logLevel := flags.String("log-level", "warn", "debug, info, warn or error")
	pos, err := parseFlags(flags, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageError(flags, "takes no arguments, got %q", pos)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	if missing := fuseMissing("/dev/fuse", os.Geteuid(), exec.LookPath); missing != "" {
		return fmt.Errorf("FUSE is not available: %s", missing)
	}
	root, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	table, err := prepareSample(ctx, root, *fresh)
	if err != nil {
		return err
	}
	mnt := filepath.Join(root, "mnt")
	if err := prepareMountpoint(mnt); err != nil {
		return err
	}
	cfg := mount.Config{
		Sources:    []mount.Source{{Name: sample.Table, URL: table}},
		Mountpoint: mnt,
		CacheDir:   filepath.Join(root, ".cache"),
		EngineInfo: "deltafs/" + buildVersion().Version,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	return serveDemo(ctx, cfg)
}

// fuseMissing says what a FUSE mount lacks, or "" when one can be tried:
// the device dev, and for a non-root euid the right to open it and the
// fusermount3 helper.
func fuseMissing(dev string, euid int, lookPath func(string) (string, error)) string {
	if _, err := os.Stat(dev); err != nil {
		return dev + " does not exist: load the fuse kernel module (sudo modprobe fuse) " +
			"and install fuse3 (sudo apt-get install fuse3); in a container, " +
			"run it with --device /dev/fuse --cap-add SYS_ADMIN"
	}
	if euid == 0 {
		return ""
	}
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return fmt.Sprintf("cannot open %s as a normal user: %v (it is normally mode 0666: "+
			"sudo chmod 0666 %s, or run as root)", dev, err, dev)
	}
	f.Close()
	if _, err := lookPath("fusermount3"); err != nil {
		return "fusermount3 is not installed (a normal user mounts through it): " +
			"sudo apt-get install fuse3 (or make tools-system), or run as root"
	}
	return ""
}

// prepareSample returns the sample table's dir under root, generating it
// unless it exists (and fresh is false).
func prepareSample(ctx context.Context, root string, fresh bool) (string, error) {
	table := filepath.Join(root, sample.Table)
	_, err := os.Stat(filepath.Join(table, "_delta_log"))
	switch {
	case err == nil && !fresh:
		fmt.Printf("deltafs demo: reusing the sample table %s (--fresh regenerates it)\n", table)
		return table, nil
	case err == nil:
		if err := os.RemoveAll(table); err != nil {
			return "", fmt.Errorf("remove the old sample: %w", err)
		}
	case !errors.Is(err, iofs.ErrNotExist):
		return "", fmt.Errorf("sample table %s: %w", table, err)
	}
	if err := sample.Generate(ctx, root); err != nil {
		return "", err
	}
	fmt.Printf("deltafs demo: generated the sample table %s\n", table)
	return table, nil
}

// prepareMountpoint creates mnt, detaching the dead mount a killed demo
// leaves behind, and refuses a mountpoint that is still served.
func prepareMountpoint(mnt string) error {
	var st, parent syscall.Stat_t
	err := syscall.Stat(mnt, &st)
	if err == nil {
		if _, rerr := os.ReadDir(mnt); deadMount(rerr) { // the root's attributes may be cached
			err = rerr
		}
	}
	if deadMount(err) {
		fmt.Fprintf(os.Stderr, "deltafs demo: detaching the dead mount at %s\n", mnt)
		if err := unmountPath(mnt, true); err != nil {
			return err
		}
		err = syscall.Stat(mnt, &st)
	}
	if errors.Is(err, syscall.ENOENT) {
		return os.MkdirAll(mnt, 0o755)
	}
	if err != nil {
		return fmt.Errorf("mountpoint %s: %w", mnt, err)
	}
	if syscall.Stat(filepath.Dir(mnt), &parent) == nil && parent.Dev != st.Dev {
		return fmt.Errorf("%s is already mounted (is another demo running?): deltafs unmount %s", mnt, mnt)
	}
	return nil
}

// serveDemo mounts, prints the tour and serves until ctx ends, then
// unmounts (detaching if files are still open).
func serveDemo(ctx context.Context, cfg mount.Config) error {
	srv, err := mount.Mount(ctx, cfg)
	if err != nil {
		return err
	}
	for name, reason := range srv.Refused() {
		fmt.Fprintf(os.Stderr, "deltafs demo: table %s refused: %v\n", name, reason)
	}
	printTour(os.Stdout, cfg.Mountpoint)
	go func() {
		<-ctx.Done()
		fmt.Fprintf(os.Stderr, "deltafs demo: unmounting %s\n", cfg.Mountpoint)
		if err := srv.Unmount(); err != nil {
			fmt.Fprintf(os.Stderr, "deltafs demo: %v; detaching\n", err)
			if err := unmountPath(cfg.Mountpoint, true); err != nil {
				fmt.Fprintf(os.Stderr, "deltafs demo: detach %s: %v\n", cfg.Mountpoint, err)
			}
		}
	}()
	srv.Wait()
	fmt.Fprintf(os.Stderr, "deltafs demo: unmounted %s\n", cfg.Mountpoint)
	return nil
}

// printTour prints what to try on the mounted sample, naming a real data
// file, and ends with demoReady.
func printTour(w io.Writer, mnt string) {
	t := filepath.Join(mnt, sample.Table)
	file := filepath.Join(t, "@latest", "region=eu", "<file>.parquet")
	if ents, err := os.ReadDir(filepath.Join(t, "@latest", "region=eu")); err == nil && len(ents) > 0 {
		file = filepath.Join(t, "@latest", "region=eu", ents[0].Name())
	}
	day := sample.CommitTime(2).AddDate(0, 0, 1).Format("2006-01-02")
	lines := [][2]string{
		{"ls " + t, "@latest, @v0..@v6, _history.jsonl"},
		{"readlink " + t + "/@latest", "the newest version (@v6 in a fresh sample)"},
		{"ls -l " + t + "/@latest/region=eu", "the live Parquet files of one partition"},
		{"head -c 4 " + file + "; echo", "a plain Parquet file (PAR1)"},
		{"cat " + t + "/_history.jsonl", "one JSON line per commit: CREATE, WRITEs, DELETE"},
		{"ls " + t + "/@v3/region=eu", "before the DELETE; @v4 on serves files without the deleted rows"},
		{"ls " + t + "/@" + day, "time travel by date: the table as of that day (v2)"},
		{fmt.Sprintf("ls %s/@changes/v%d..v%d", t, sample.DeleteVersion, sample.DeleteVersion), "the change feed as Parquet files: the rows the DELETE removed, with _change_type"},
		{os.Args[0] + " ls " + filepath.Join(filepath.Dir(mnt), sample.Table) + "@v4", "the same from the log, without a mount"},
	}
	if fi, err := os.Stat(filepath.Join(t, "inbox")); err == nil && fi.IsDir() {
		inbox := t + "/inbox/region=eu"
		lines = append(lines, [2]string{"mkdir -p " + inbox + " && cp " + file + " " + inbox + "/", "append a file: it becomes the next version when closed"})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\ndeltafs demo: the sample table %q is mounted at %s\n", sample.Table, mnt)
	fmt.Fprintf(&b, "(partitioned by region, %d versions a day apart, a DELETE stored as deletion vectors at v%d, a checkpoint at v%d)\n\n",
		sample.LatestVersion+1, sample.DeleteVersion, sample.CheckpointVersion)
	b.WriteString("Try, in another terminal:\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "  %s\n      # %s\n", l[0], l[1])
	}
	fmt.Fprintf(&b, "\nPress Ctrl-C to unmount and exit.\n%s\n", demoReady)
	io.WriteString(w, b.String())
}
