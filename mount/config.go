// Package mount mounts Delta tables: it resolves the sources to tables and
// composes the engine (delta), the caches (blobcache), the data file
// server of each table (serve) and the committers of the inboxes
// (writeback) into the FUSE tree of package nodes; it runs the refresh
// loop that moves @latest, serves the metrics and owns the mount's
// lifecycle. It holds no serving or commit logic of its own.
package mount

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/deltafs/deltafs/inbox"
	"github.com/deltafs/deltafs/pqfile"
)

// Source is one SOURCE argument of the mount: a table or a warehouse.
type Source struct {
	// Name is the table's name in the mount; "" means the last path
	// element of URL. Only used when URL is a table (not a warehouse).
	Name string
	// URL is a local path or a gocloud blob URL.
	URL string
}

// Config describes a mount. Zero fields take the documented defaults.
type Config struct {
	// Sources are the tables and warehouses to mount.
	Sources []Source
	// Mountpoint is the directory to mount on (unused by ServeNFS).
	Mountpoint string
	// NFSSettle is how long ServeNFS keeps a file written over NFS open
	// after its last WRITE before closing it, which commits a file under
	// its final name in an inbox (default nfsfront.DefaultSettle).
	NFSSettle time.Duration
	// ReadOnly mounts with the "ro" option: the kernel refuses every
	// write, and no table has an inbox/. (Snapshots are read-only
	// regardless.)
	ReadOnly bool
	// SingleWriter allows appends to tables whose store failed the
	// put-if-absent probe at mount (a store that does not honour
	// conditional writes): the user promises that this mount is the only
	// writer. Without it such tables get no working inbox.
	SingleWriter bool
	// AllowOther lets other users see the mount.
	AllowOther bool
	// XAttrs serves user.delta.* extended attributes on data files.
	XAttrs bool
	// NoPassthrough forces every read through the userspace path.
	NoPassthrough bool
	// PartitionColumns serves each data file with its partition values as
	// typed constant columns, in the schema's column order, so that a tool
	// reading one file, or parsing Hive directory names differently from
	// Spark, gets the table's exact values.
	PartitionColumns bool
	// UID and GID own every file (0: the caller's). With AllowOther, a
	// local table's entries show their sources' owners, groups and modes
	// instead (the table directory's, each data file's, _delta_log's for
	// inbox/), which UID and GID replace only when set.
	UID, GID uint32
	// Umask clears permission bits of every mode the mount reports (the
	// defaults are 0555 directories, 0444 files, 0755 inbox directories,
	// 0600 staged files, owned by their writer);
	// e.g. 0o027 shuts out other users. The kernel checks modes against
	// the caller (default_permissions), so UID, GID and Umask decide who
	// may read the tables and who may append through the inbox.
	Umask uint32
	// CacheDir holds the disk cache of rewritten files (default:
	// /var/cache/deltafs as root, else $XDG_CACHE_HOME/deltafs).
	CacheDir string
	// CacheSize bounds the disk cache in bytes (default 10 GiB).
	CacheSize int64
	// SnapshotCacheSize bounds the estimated heap bytes of the snapshots
	// and table states the mount's tables keep, together (default
	// delta.DefaultStateBytes); parsed commits get an eighth of it more.
	SnapshotCacheSize int64
	// MemoryCacheSize bounds the memory block cache in bytes (default
	// 256 MiB).
	MemoryCacheSize int64
	// Refresh is how often each table is asked for new commits (default
	// 1s); it is also the kernel timeout of what can change.
	Refresh time.Duration
	// Logger receives mount events and the reasons of failed operations
	// (default: slog.Default()).
	Logger *slog.Logger
	// Debug logs every FUSE request.
	Debug bool
	// InboxStaleAfter is how long a staged inbox file that will not be
	// committed (a temporary name never renamed, an empty file) may sit
	// idle before it is removed (default DefaultInboxStaleAfter,
	// 1h; negative: never). See inbox.Inbox.Sweep.
	InboxStaleAfter time.Duration
	// CommitTimeout caps the wait of an inbox close() or rename() for its
	// commit, uploads and retries included (default DefaultCommitTimeout);
	// past it the answer is EIO with the reason in _status.jsonl. Every
	// storage request also has its own deadline (blobstore's request
	// timeout).
	CommitTimeout time.Duration
	// ValidationMemory bounds the memory of the validation of inbox files
	// (each is decoded page by page before its commit), all tables and
	// files together (default DefaultValidationMemory); a page that needs
	// more than all of it refuses its file.
	ValidationMemory int64
	// Volume names the mount for whoever runs it (the CSI plugin passes
	// its volume id): shown in the status file; "" for none.
	Volume string
	// EngineInfo is the commitInfo.engineInfo of inbox commits (default
	// "deltafs"; the CLI sets "deltafs/<version>").
	EngineInfo string
}

// Defaults of Config.
const (
	DefaultCacheSize       = 10 << 30
	DefaultRefresh         = time.Second
	DefaultInboxStaleAfter = inbox.DefaultStaleAfter
	DefaultCommitTimeout   = inbox.DefaultCommitTimeout
	// DefaultValidationMemory is Config.ValidationMemory's default.
	DefaultValidationMemory = pqfile.DefaultProveMemory
)

// withDefaults returns cfg with zero fields filled in, or an error for a
// config that cannot mount.
func (cfg Config) withDefaults() (Config, error) {
	if len(cfg.Sources) == 0 {
		return cfg, fmt.Errorf("no source to mount")
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.UID == 0 {
		cfg.UID = uint32(os.Getuid())
	}
	if cfg.GID == 0 {
		cfg.GID = uint32(os.Getgid())
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.EngineInfo == "" {
		cfg.EngineInfo = "deltafs"
	}
	if cfg.CacheDir == "" {
		dir, err := defaultCacheDir()
		if err != nil {
			return cfg, err
		}
		cfg.CacheDir = dir
	}
	return cfg, nil
}

// defaultCacheDir is /var/cache/deltafs for root, else the user cache dir.
func defaultCacheDir() (string, error) {
	if os.Geteuid() == 0 {
		return "/var/cache/deltafs", nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache dir (set --cache-dir): %w", err)
	}
	return filepath.Join(dir, "deltafs"), nil
}
