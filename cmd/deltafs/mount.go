package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/mount"
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

Flags may come before or after the arguments. With --config FILE the
tables, the mountpoint and any flag come from a YAML file; flags given on
the command line override it, and SOURCE... MOUNTPOINT replace its tables
and mountpoint (a lone argument replaces the mountpoint only):

%s

Credentials come from the environment, as each cloud's SDK defines it:
AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_PROFILE/AWS_REGION (or an
instance role), GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_ACCOUNT with
AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN (or az login).

Examples:
  deltafs mount ./orders /mnt/delta
  deltafs mount sales=s3://bucket/warehouse/sales?region=eu-west-1 /mnt/delta
  deltafs mount --read-only --cache-size 50G /data/warehouse /mnt/delta
  deltafs mount --config /etc/deltafs/mount.yaml
  deltafs mount --daemon --log-file /var/log/deltafs.log --metrics-addr :9464 ./warehouse /mnt/delta
  mount -t fuse.deltafs orders=/data/orders /mnt/delta -o ro,allow_other   # via mount.fuse.deltafs
`

type mountFlags struct {
	readOnly, allowOther, xattrs, noPassthrough, debug, daemon, singleWriter, partitionColumns, strict, nfs bool
	uid, gid                                                                                                uint
	cacheDir, cacheSize, memoryCacheSize, snapshotCache, validationMemory, logLevel, umask                  string
	configFile, logFile, metricsAddr, maxParquetFooter, volume                                              string
	maxParquetColumns                                                                                       int
	refresh, inboxStaleAfter, commitTimeout                                                                 time.Duration
}

func runMount(ctx context.Context, args []string) error {
	flags := newFlags("mount", "[SOURCE...] MOUNTPOINT", fmt.Sprintf(mountHelp, indent(configExample)))
	var f mountFlags
	f.define(flags)
	flags.BoolVar(&f.nfs, "nfs", false, "mount through the OS's NFS client instead of FUSE (no FUSE needed: macOS): serves the tables on a free loopback port and runs mount_nfs (macOS) or mount -t nfs (Linux); see 'deltafs serve nfs --help'")
	pos, err := parseFlags(flags, args)
	if err != nil {
		return err
	}
	cfg, err := f.resolve(flags, pos)
	if errors.Is(err, errUsage) {
		return usageError(flags, "want SOURCE... MOUNTPOINT, or --config FILE with tables and a mountpoint")
	}
	if err != nil {
		return err
	}
	if err := checkMountpoint(cfg.Mountpoint); err != nil {
		return err
	}
	if f.nfs {
		if f.daemon {
			return usageError(flags, "--nfs runs in the foreground (no --daemon)")
		}
		return serveNFSMount(ctx, cfg, &f)
	}
	if f.daemon && !isDaemonChild() {
		return daemonize(args, f.logFile)
	}
	return serveMount(ctx, cfg, &f)
}

// define declares the mount flags on flags (rclone/gcsfuse style names).
func (f *mountFlags) define(flags *flag.FlagSet) {
	flags.StringVar(&f.configFile, "config", "", "YAML `FILE` with tables, mountpoint and flags (see above)")
	flags.BoolVar(&f.readOnly, "read-only", false, "mount read-only (the kernel refuses every write; no inbox/)")
	flags.BoolVar(&f.singleWriter, "single-writer", false, "allow appends to tables whose object store fails the put-if-absent probe (only safe if this mount is the only writer)")
	flags.BoolVar(&f.allowOther, "allow-other", false, "let other users access the mount; local tables then show their sources' owners and modes, which the kernel enforces (non-root: needs user_allow_other in /etc/fuse.conf)")
	flags.UintVar(&f.uid, "uid", 0, "`UID` owning every file (default: the caller)")
	flags.UintVar(&f.gid, "gid", 0, "`GID` of every file (default: the caller's)")
	flags.Var(checkedString{&f.umask, func(s string) error { _, err := parseUmask(s); return err }},
		"umask", "permission bits to clear from every mode (`OCTAL`, e.g. 027; default none: dirs 555, files 444)")
	flags.StringVar(&f.cacheDir, "cache-dir", "", "disk cache `DIR` (default /var/cache/deltafs as root, else ~/.cache/deltafs)")
	f.memoryCacheSize = "256M"
	flags.Var(checkedString{&f.memoryCacheSize, func(s string) error { _, err := parseSize(s); return err }},
		"memory-cache-size", "memory block cache bound for object-store reads (`SIZE`); the process's memory limit is the budgets plus 160 MiB (docs/operations.md)")
	f.snapshotCache = "512M"
	flags.Var(checkedString{&f.snapshotCache, func(s string) error { _, err := parseSize(s); return err }},
		"snapshot-cache", "memory bound for the snapshots and table states kept, all tables together (`SIZE`, estimated; parsed commits get an eighth more)")
	f.cacheSize = "10G"
	flags.Var(checkedString{&f.cacheSize, func(s string) error { _, err := parseSize(s); return err }},
		"cache-size", "disk cache bound in bytes (`SIZE`: 10G, 512M, ...)")
	f.validationMemory = "256M"
	flags.Var(checkedString{&f.validationMemory, func(s string) error { _, err := parseSize(s); return err }},
		"validation-memory", "memory bound for decoding inbox files before their commit, all files together (`SIZE`); a page needing more refuses its file")
	flags.DurationVar(&f.refresh, "refresh", mount.DefaultRefresh, "how often @latest looks for new commits")
	flags.DurationVar(&f.commitTimeout, "commit-timeout", mount.DefaultCommitTimeout,
		"longest wait of an inbox close() or rename() for its commit, uploads included (`DURATION`); past it the answer is EIO, the reason in inbox/_status.jsonl")
	flags.DurationVar(&f.inboxStaleAfter, "inbox-stale-after", mount.DefaultInboxStaleAfter,
		"remove staged inbox files never committed (temporary names not renamed, empty files) after this `DURATION` without a write; 0: never")
	f.logLevel = "info"
	flags.Var(checkedString{&f.logLevel, func(s string) error { var l slog.Level; return l.UnmarshalText([]byte(s)) }},
		"log-level", "`LEVEL`: debug, info, warn or error")
	flags.StringVar(&f.logFile, "log-file", "", "append logs to `FILE` instead of stderr")
	flags.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`ADDR`/metrics, e.g. 127.0.0.1:9464 (or unix:PATH, a Unix socket)")
	flags.BoolVar(&f.daemon, "daemon", false, "run in the background: print the pid and exit once the mount is ready")
	flags.BoolVar(&f.xattrs, "xattrs", false, "serve user.delta.* extended attributes on data files")
	flags.BoolVar(&f.noPassthrough, "no-passthrough", false, "serve every read in userspace (no kernel passthrough)")
	flags.BoolVar(&f.partitionColumns, "partition-columns", false, "serve partition columns inside every data file, typed as the table has them (turn off the reader's Hive parsing)")
	flags.BoolVar(&f.debug, "debug", false, "log every FUSE request")
	flags.BoolVar(&f.strict, "strict", false, "fail the mount when a table cannot be read, instead of serving its _deltafs_error.txt")
	flags.StringVar(&f.volume, "volume", "", "`NAME` of this mount in every log line and in the status file (the CSI plugin passes the volume id)")
	defineParquetLimits(flags, &f.maxParquetFooter, &f.maxParquetColumns)
}

// resolve applies the config file (if any) under the command-line flags
// and builds the mount config.
func (f *mountFlags) resolve(flags *flag.FlagSet, pos []string) (mount.Config, error) {
	var mf *mountFile
	if f.configFile != "" {
		var err error
		if mf, err = loadMountFile(f.configFile, flags); err != nil {
			return mount.Config{}, err
		}
		if err := applySettings(flags, mf.settings, setFlags(flags)); err != nil {
			return mount.Config{}, err
		}
	}
	sources, mountpoint, err := mergeArgs(mf, pos)
	if err != nil {
		return mount.Config{}, err
	}
	return f.config(sources, mountpoint)
}

// config builds the mount config from the flags, the sources and the
// mountpoint. Its Logger writes to stderr; serveMount redirects it to
// --log-file.
func (f *mountFlags) config(sources []mount.Source, mountpoint string) (mount.Config, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return mount.Config{}, fmt.Errorf("--log-level: %w", err)
	}
	size, err := parseSize(f.cacheSize)
	if err != nil {
		return mount.Config{}, fmt.Errorf("--cache-size: %w", err)
	}
	memSize, err := parseSize(f.memoryCacheSize)
	if err != nil {
		return mount.Config{}, fmt.Errorf("--memory-cache-size: %w", err)
	}
	snapCache, err := parseSize(f.snapshotCache)
	if err != nil {
		return mount.Config{}, fmt.Errorf("--snapshot-cache: %w", err)
	}
	if err := setParquetLimits(f.maxParquetFooter, f.maxParquetColumns); err != nil {
		return mount.Config{}, err
	}
	valMem, err := parseSize(f.validationMemory)
	if err != nil {
		return mount.Config{}, fmt.Errorf("--validation-memory: %w", err)
	}
	umask, err := parseUmask(f.umask)
	if err != nil {
		return mount.Config{}, fmt.Errorf("--umask: %w", err)
	}
	return mount.Config{
		Sources:    sources,
		Mountpoint: mountpoint,
		ReadOnly:   f.readOnly, SingleWriter: f.singleWriter, AllowOther: f.allowOther, XAttrs: f.xattrs, NoPassthrough: f.noPassthrough,
		PartitionColumns: f.partitionColumns,
		UID:              uint32(f.uid), GID: uint32(f.gid), Umask: umask,
		CacheDir: f.cacheDir, CacheSize: size, MemoryCacheSize: memSize, SnapshotCacheSize: snapCache, Refresh: f.refresh,
		Logger:           slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
		Debug:            f.debug,
		EngineInfo:       "deltafs/" + buildVersion().Version,
		InboxStaleAfter:  staleAfter(f.inboxStaleAfter),
		CommitTimeout:    f.commitTimeout,
		ValidationMemory: valMem,
		Volume:           f.volume,
	}, nil
}

// serveMount mounts, says so on stderr (or in --log-file), serves
// metrics on --metrics-addr, reports readiness (to a --daemon parent or
// systemd) and unmounts when ctx ends (a signal); it returns once the
// mount is gone.
func serveMount(ctx context.Context, cfg mount.Config, f *mountFlags) (err error) {
	base := limitMemory(startBudgets(cfg.MemoryCacheSize, cfg.ValidationMemory, cfg.SnapshotCacheSize))
	defer func() { notifyReady(err) }() // a failure before the mount reaches the parent
	out, closeLog, err := openLog(f.logFile)
	if err != nil {
		return err
	}
	defer closeLog()
	cfg.Logger = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: levelOf(f.logLevel)}))
	if f.volume != "" {
		cfg.Logger = cfg.Logger.With("volume", f.volume)
		out = prefixWriter{out, "volume " + f.volume + ": "}
	}
	metrics, err := listenMetrics(f.metricsAddr)
	if err != nil {
		return err
	}
	srv, err := mount.Mount(ctx, cfg)
	if err != nil {
		closeListener(metrics)
		return err
	}
	if refused := srv.Refused(); f.strict && len(refused) > 0 {
		closeListener(metrics)
		srv.Unmount()
		return refusedError(refused)
	}
	stopMetrics := serveMetrics(metrics, srv, cfg.Logger)
	defer stopMetrics()
	if base > 0 {
		stopFollow := followMemory(base, srv.MemoryBudgets)
		defer stopFollow()
	}
	fmt.Fprintln(out, mountedLine(cfg.Mountpoint, len(srv.Tables()), srv.Refused()))
	notifyReady(nil)
	go func() {
		<-ctx.Done()
		notifyStopping()
		if err := srv.Unmount(); err != nil {
			// Files are still open: detach now, the kernel finishes the
			// unmount when the last one is closed. One line: the helper's
			// own error (fusermount3 prints three) says no more.
			if derr := unmountPath(cfg.Mountpoint, true); derr != nil {
				fmt.Fprintf(out, "deltafs: unmount %s: %v; detach: %v\n", cfg.Mountpoint, firstLine(err), derr)
				return
			}
			fmt.Fprintf(out, "deltafs: %s busy; detached lazily, exiting when files close\n", cfg.Mountpoint)
		}
	}()
	srv.Wait()
	fmt.Fprintf(out, "deltafs: unmounted %s\n", cfg.Mountpoint)
	return nil
}

// refusedError says which tables a --strict mount refused, and why.
func refusedError(refused map[string]error) error {
	names := slices.Sorted(maps.Keys(refused))
	why := make([]string, len(names))
	for i, name := range names {
		why[i] = fmt.Sprintf("table %s: %v", name, refused[name])
	}
	return fmt.Errorf("--strict: %s", strings.Join(why, "; "))
}

// prefixWriter starts every write (one line, as serveMount writes them)
// with prefix.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// firstLine is the first line of err's text.
func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// parseSource splits [NAME=]URL. The text before the first '=' is a name
// only if it has no '/', ':' or '?', so that '=' in a URL's query or path
// stays part of the URL.
func parseSource(arg string) mount.Source {
	name, url, ok := strings.Cut(arg, "=")
	if ok && name != "" && !strings.ContainsAny(name, "/:?") {
		return mount.Source{Name: name, URL: url}
	}
	return mount.Source{URL: arg}
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
		return usageError(flags, "want one MOUNTPOINT, got %d arguments", len(pos))
	}
	if err := checkUnmount(pos[0]); err != nil {
		return err
	}
	return unmountPath(pos[0], *lazy)
}

// unmountPath unmounts dir: umount2 as root, fusermount3 otherwise (umount
// for an NFS mount).
func unmountPath(dir string, lazy bool) error {
	if abs, err := filepath.Abs(dir); err == nil && os.Geteuid() != 0 {
		if m, err := mountOf(abs); err == nil && m.found && m.point == abs && isNFSMount(m) {
			return runUnmountCommand(nfsUnmountCommand(runtime.GOOS, dir, lazy))
		}
	}
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = detachFlag
		}
		if err := syscall.Unmount(dir, flags); err != nil {
			if errors.Is(err, syscall.EBUSY) {
				return fmt.Errorf("unmount %s: busy (files are open or a process works in it): close them, or detach now with --lazy", dir)
			}
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
		msg := strings.TrimSpace(string(out))
		if strings.Contains(msg, "busy") && !lazy {
			msg += " (close the open files, or detach now with --lazy)"
		}
		return fmt.Errorf("unmount %s: %v: %s", dir, err, msg)
	}
	return nil
}

// parseUmask parses an octal umask ("027", "0o027"); "" is 0.
func parseUmask(s string) (uint32, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "0o"), 8, 32)
	if err != nil || n > 0o777 {
		return 0, fmt.Errorf("%q is not an octal umask of at most 777", s)
	}
	return uint32(n), nil
}

// tablesCount says "1 table", "3 tables".
// mountedLine is the one line that says the mount is up: how many
// tables, and which were refused (their reasons are logged once, by the
// mount, and kept in each one's _deltafs_error.txt).
func mountedLine(mnt string, tables int, refused map[string]error) string {
	if len(refused) == 0 {
		return fmt.Sprintf("deltafs: mounted %s at %s", tablesCount(tables), mnt)
	}
	names := slices.Sorted(maps.Keys(refused))
	return fmt.Sprintf("deltafs: mounted %d of %s at %s; refused: %s (why: %s)", tables-len(refused), tablesCount(tables), mnt,
		strings.Join(names, ", "), filepath.Join(mnt, names[0], "_deltafs_error.txt"))
}

func tablesCount(n int) string {
	if n == 1 {
		return "1 table"
	}
	return fmt.Sprintf("%d tables", n)
}

// staleAfter maps --inbox-stale-after to mount.Config: 0 (never) is negative there.
func staleAfter(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
