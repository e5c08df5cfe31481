package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/fs"
)

const mountHelp = `Mount Delta tables as directories of snapshots and serve them until
unmounted or interrupted (SIGINT/SIGTERM unmount cleanly).

SOURCE is [NAME=]URL: a local path or a gocloud URL (s3://, gs://, azblob://,
file://). A source whose root holds _delta_log/ is one table, shown as
MOUNTPOINT/NAME (NAME defaults to the last path element of URL). Any other
source is a warehouse: each child directory holding _delta_log/ becomes
MOUNTPOINT/<child>. A table that cannot be read does not stop the mount: its
directory holds _deltafs_error.txt saying why.

Each table directory holds @latest (symlink to the newest @vN), @v0..@vN,
_history.jsonl, and resolves @<time> (2026-05-01, 2026-05-01T14:30:00Z,
20260501143000000) on lookup.

Examples:
  deltafs mount ./orders /mnt/delta
  deltafs mount sales=s3://bucket/warehouse/sales?region=eu-west-1 /mnt/delta
  deltafs mount --read-only --cache-size 50G /data/warehouse /mnt/delta
`

type mountFlags struct {
	readOnly, allowOther, xattrs, noPassthrough, debug bool
	uid, gid                                           uint
	cacheDir, cacheSize, logLevel                      string
	refresh                                            time.Duration
}

func runMount(ctx context.Context, args []string) error {
	flags := newFlags("mount", "SOURCE... MOUNTPOINT", mountHelp)
	var f mountFlags
	flags.BoolVar(&f.readOnly, "read-only", false, "mount read-only (the kernel refuses every write)")
	flags.BoolVar(&f.allowOther, "allow-other", false, "let other users access the mount")
	flags.UintVar(&f.uid, "uid", 0, "owner of every file (default: the caller)")
	flags.UintVar(&f.gid, "gid", 0, "group of every file (default: the caller's)")
	flags.StringVar(&f.cacheDir, "cache-dir", "", "disk cache directory (default /var/cache/deltafs as root, else ~/.cache/deltafs)")
	flags.StringVar(&f.cacheSize, "cache-size", "10G", "disk cache bound, e.g. 10G, 512M")
	flags.DurationVar(&f.refresh, "refresh", fs.DefaultRefresh, "how often @latest looks for new commits")
	flags.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	flags.BoolVar(&f.xattrs, "xattrs", false, "serve user.delta.* extended attributes on data files")
	flags.BoolVar(&f.noPassthrough, "no-passthrough", false, "serve every read in userspace (no kernel passthrough)")
	flags.BoolVar(&f.debug, "debug", false, "log every FUSE request")
	pos, err := parseFlags(flags, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		flags.Usage()
		return errUsage
	}
	cfg, err := f.config(pos)
	if err != nil {
		return err
	}
	return serveMount(ctx, cfg)
}

// config builds the mount config from the flags and positional arguments.
func (f *mountFlags) config(pos []string) (fs.Config, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fs.Config{}, fmt.Errorf("--log-level: %w", err)
	}
	size, err := parseSize(f.cacheSize)
	if err != nil {
		return fs.Config{}, fmt.Errorf("--cache-size: %w", err)
	}
	cfg := fs.Config{
		Mountpoint: pos[len(pos)-1],
		ReadOnly:   f.readOnly, AllowOther: f.allowOther, XAttrs: f.xattrs, NoPassthrough: f.noPassthrough,
		UID: uint32(f.uid), GID: uint32(f.gid),
		CacheDir: f.cacheDir, CacheSize: size, Refresh: f.refresh,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
		Debug:  f.debug, EngineInfo: "deltafs/" + version,
	}
	for _, arg := range pos[:len(pos)-1] {
		cfg.Sources = append(cfg.Sources, parseSource(arg))
	}
	return cfg, nil
}

// serveMount mounts, says so on stderr, and unmounts when ctx ends (a
// signal); it returns once the mount is gone.
func serveMount(ctx context.Context, cfg fs.Config) error {
	srv, err := fs.Mount(ctx, cfg)
	if err != nil {
		return err
	}
	for name, reason := range srv.Refused() {
		fmt.Fprintf(os.Stderr, "deltafs: table %s refused: %v\n", name, reason)
	}
	fmt.Fprintf(os.Stderr, "deltafs: mounted %d tables at %s\n", len(srv.Tables()), cfg.Mountpoint)
	go func() {
		<-ctx.Done()
		if err := srv.Unmount(); err != nil {
			// Files are still open: detach now, the kernel finishes the
			// unmount when the last one is closed.
			fmt.Fprintf(os.Stderr, "deltafs: %v; detaching\n", err)
			if err := unmountPath(cfg.Mountpoint, true); err != nil {
				fmt.Fprintf(os.Stderr, "deltafs: detach %s: %v\n", cfg.Mountpoint, err)
			}
		}
	}()
	srv.Wait()
	fmt.Fprintf(os.Stderr, "deltafs: unmounted %s\n", cfg.Mountpoint)
	return nil
}

// parseSource splits [NAME=]URL. The text before the first '=' is a name
// only if it has no '/', ':' or '?', so that '=' in a URL's query or path
// stays part of the URL.
func parseSource(arg string) fs.Source {
	name, url, ok := strings.Cut(arg, "=")
	if ok && name != "" && !strings.ContainsAny(name, "/:?") {
		return fs.Source{Name: name, URL: url}
	}
	return fs.Source{URL: arg}
}

// parseSize parses a byte count with an optional binary suffix: 1024,
// 512K, 512M, 10G, 1T (also KiB/MiB/GiB/TiB and KB/MB/GB/TB, all binary).
func parseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		if i := strings.IndexByte("KMGT", t[n-1]); i >= 0 {
			mult = int64(1) << (10 * (i + 1))
			t = t[:n-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q (want e.g. 10G, 512M)", s)
	}
	return n * mult, nil
}

const unmountHelp = `Unmount a deltafs mount (as root with umount(2), else with fusermount3 -u).

Examples:
  deltafs unmount /mnt/delta
`

func runUnmount(ctx context.Context, args []string) error {
	flags := newFlags("unmount", "MOUNTPOINT", unmountHelp)
	lazy := flags.Bool("lazy", false, "detach now even if files are open")
	pos, err := parseFlags(flags, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		flags.Usage()
		return errUsage
	}
	return unmountPath(pos[0], *lazy)
}

// unmountPath unmounts dir: umount2 as root, fusermount3 otherwise.
func unmountPath(dir string, lazy bool) error {
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = syscall.MNT_DETACH
		}
		if err := syscall.Unmount(dir, flags); err != nil {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
		return nil
	}
	args := []string{"-u", dir}
	if lazy {
		args = []string{"-uz", dir}
	}
	out, err := exec.Command("fusermount3", args...).CombinedOutput()
	if err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			return fmt.Errorf("unmount %s: fusermount3 not found (install fuse3): %w", dir, err)
		}
		return fmt.Errorf("unmount %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}
