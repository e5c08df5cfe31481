// Package nodes is the FUSE tree of a deltafs mount: the root, one
// directory per table, the @vN snapshot directories with their Hive layout,
// the data files, the @latest and @<timestamp> symlinks, the
// _history.jsonl file, the status and reason files, and the place of a
// table's inbox/ (package inbox builds it, over what this package
// exports: the Env, attributes, inode numbers and errno choice).
//
// It knows Delta only through the engine's value types (snapshots, live
// files) and asks package serve (through Files) for the bytes of data
// files. Go errors become errnos in errno.go, for the inbox too; a node
// answers a rule of the tree's own (EROFS, ENOENT, EEXIST) directly.
package nodes

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/serve"
)

// Table is what the tree needs of one Delta table. *delta.Table
// implements it. Implementations must be safe for concurrent use.
type Table interface {
	// Latest returns the newest snapshot.
	Latest(ctx context.Context) (*delta.Snapshot, error)
	// Snapshot returns the snapshot at a version; a version that is not
	// reconstructable is an error wrapping delta.ErrVersionNotFound.
	Snapshot(ctx context.Context, version int64) (*delta.Snapshot, error)
	// Version describes a version without building its snapshot: an
	// error wrapping delta.ErrVersionNotFound when it is not
	// reconstructable, else its commit time.
	Version(ctx context.Context, version int64) (delta.VersionInfo, error)
	// VersionsIn is Version for each version of from..to (errs[i] is the
	// answer's error for from+i), reading what it needs in parallel; only
	// a cancelled ctx fails it whole.
	VersionsIn(ctx context.Context, from, to int64) (infos []delta.VersionInfo, errs []error, err error)
	// VersionAt returns the version as of a time (delta's rule).
	VersionAt(ctx context.Context, ts time.Time) (int64, error)
	// VersionAtOrAfter returns the first version committed at or after a
	// time (the start of a range of changes named by time).
	VersionAtOrAfter(ctx context.Context, ts time.Time) (int64, error)
	// VersionRanges lists the reconstructable versions as ascending
	// inclusive ranges.
	VersionRanges(ctx context.Context) ([]delta.VersionRange, error)
	// HistoryEach calls fn with the summary of each version in [from, to]
	// that has a commit file, oldest first, in bounded memory.
	HistoryEach(ctx context.Context, from, to int64, fn func(delta.CommitSummary) error) error
	// HistorySize returns the byte size of the lines (CommitSummary's
	// AppendLine) of the versions in [from, to] that have a commit file.
	HistorySize(ctx context.Context, from, to int64) (int64, error)
	// Changes calls fn with the change files of versions from..to (the
	// change data feed); a range it cannot give is an error wrapping
	// delta.ErrChangesUnavailable, before fn is called.
	Changes(ctx context.Context, from, to int64, fn func(delta.ChangeFile) error) error
	// Rows returns the rows of a change file that are changes.
	Rows(ctx context.Context, f delta.ChangeFile) (keep, drop *roaring64.Bitmap, err error)
}

// Files serves the bytes of one table's data files; serve.Table
// implements it, and each table directory gets its own (NewTableDir).
// Implementations must be safe for concurrent use.
type Files interface {
	// Size returns the exact size f, a live file of snap, is served with:
	// stored, or rewritten (serve.Rewritten).
	Size(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (int64, error)
	// KnownSize is Size of the live file of a when it is known without
	// reading anything (false: ask Size).
	KnownSize(snap *delta.Snapshot, a *delta.Add) (int64, bool)
	// Open returns the served bytes of f. A missing object is an error
	// wrapping delta.ErrNotExist.
	Open(ctx context.Context, snap *delta.Snapshot, f *delta.LiveFile) (serve.Content, error)
	// Warm hints that the sizes of these live files of snap are about to
	// be asked (a directory's first file was looked up: ls -l, a glob);
	// an implementation may find them ahead, in the background, bounded.
	// It never blocks.
	Warm(snap *delta.Snapshot, adds []*delta.Add)
	// Prepare hints that snap became its table's newest version: an
	// implementation may prepare, in the background, what the first stat
	// of any of its files needs, without reading any file. It never
	// blocks.
	Prepare(snap *delta.Snapshot)
	// ChangeSize and OpenChange are Size and Open for a change file of a
	// range whose newest snapshot is end, with its rows keep or drop
	// (Table.Rows).
	ChangeSize(ctx context.Context, end *delta.Snapshot, cf delta.ChangeFile, keep, drop *roaring64.Bitmap) (int64, error)
	OpenChange(ctx context.Context, end *delta.Snapshot, cf delta.ChangeFile, keep, drop *roaring64.Bitmap) (serve.Content, error)
}

// Options are the mount-wide settings of the tree.
type Options struct {
	// UID and GID own the entries that show no source's owner (see
	// TableDir.MirrorPerms).
	UID, GID uint32
	// Passthrough lets files whose Content has a local File be served by
	// kernel FUSE passthrough when the kernel accepts it.
	Passthrough bool
	// XAttrs serves user.delta.* extended attributes on data files.
	XAttrs bool
	// ShortTimeout is the kernel entry/attr timeout of what moves: table
	// directories, @latest, _history.jsonl (default 1s).
	ShortTimeout time.Duration
	// LongTimeout is the kernel timeout of immutable entries: @vN
	// directories and everything inside them (default 1h).
	LongTimeout time.Duration
	// Logger receives the reasons of failed operations (default: discard).
	Logger *slog.Logger
	// Observer, when set, is told of every failed operation (metrics).
	Observer Observer
	// RangePlanBytes bounds the estimated heap bytes of the plans of
	// @changes ranges the mount keeps (default DefaultRangePlanBytes).
	RangePlanBytes int64
}

// Observer is told of each operation that failed, once its errno is
// chosen (errno.go): refused is true for an inbox refusal (the user's
// file or name, or a table deltafs cannot write: EINVAL, EROFS), false
// for an error (EIO, EOPNOTSUPP, ...). Not-found (ENOENT) and interrupted
// (EINTR) operations are not reported. Implementations must be fast and
// safe for concurrent use.
type Observer interface {
	Failed(op string, errno syscall.Errno, refused bool)
}

// Env is what every node of one mount shares. Build it with NewEnv; its
// fields must not change once the mount is up.
type Env struct {
	Opts Options
	log  *slog.Logger
	// directIO: the kernel keeps mmap working on FOPEN_DIRECT_IO files
	// (FUSE_DIRECT_IO_ALLOW_MMAP), so rewritten files may bypass the FUSE
	// page cache. Set once the mount is up (SetDirectIO).
	directIO atomic.Bool
	// refusals rate-limits the log lines of writes refused with EROFS.
	refusals refusalLog
	// plans are the plans of the mount's @changes ranges (range_plans.go).
	plans *rangePlans
}

// Logger is where the tree's nodes log (Options.Logger, or a discarding
// logger).
func (e *Env) Logger() *slog.Logger { return e.log }

// SetDirectIO says whether the kernel granted FUSE_DIRECT_IO_ALLOW_MMAP:
// then rewritten files are opened with FOPEN_DIRECT_IO (see DataFile.Open);
// otherwise (or until called) they use the page cache like stored files.
func (e *Env) SetDirectIO(ok bool) { e.directIO.Store(ok) }

// NewEnv returns an Env with the defaults of opts filled in.
func NewEnv(opts Options) *Env {
	if opts.ShortTimeout <= 0 {
		opts.ShortTimeout = time.Second
	}
	if opts.LongTimeout <= 0 {
		opts.LongTimeout = time.Hour
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Env{Opts: opts, log: log, plans: newRangePlans(opts.RangePlanBytes)}
}

// Close frees what the mount's nodes keep beside their inodes (the plans
// of @changes ranges), once the mount is gone.
func (e *Env) Close() { e.plans.clear() }

// PlanUsage is what the plans of @changes ranges hold.
type PlanUsage struct {
	Budget int64 `json:"budgetBytes"`
	Bytes  int64 `json:"bytes"` // estimated heap bytes
	Plans  int   `json:"plans"`
}

// PlanUsage reports what the plans of @changes ranges hold now.
func (e *Env) PlanUsage() PlanUsage {
	b, n := e.plans.usage()
	return PlanUsage{Budget: e.plans.limit, Bytes: b, Plans: n}
}

// Errors an inbox's Writer (package inbox) returns, so that the errno is chosen (see
// errno.go) without knowing the committer's own error values.
var (
	// ErrInvalidFile: the staged file is not a Parquet file the table
	// accepts (bad magic or footer, wrong column or type, nulls in a
	// non-nullable column, wrong partition). close() fails with EINVAL.
	ErrInvalidFile = errors.New("invalid file for this table")
	// ErrNotWritable: deltafs cannot write this table (unsupported writer
	// feature, appendOnly rules, ...). Writes fail with EROFS.
	ErrNotWritable = errors.New("table not writable by deltafs")
)

// InboxName is the inbox directory in a table directory.
const InboxName = "inbox"

// KindInbox is the stable-inode kind (StableIno) of the inbox's
// directories and info files; its staged files get go-fuse's automatic
// numbers.
const KindInbox = "inbox"

// Inbox is a table directory's inbox/: package inbox builds it and holds
// its rules; TableDir.SetInbox hangs it in the table directory.
type Inbox interface {
	// Node returns the inbox directory, the same inode on every lookup,
	// with its attributes in out.
	Node(ctx context.Context, out *fuse.EntryOut) *fs.Inode
	// State is the inbox's part of the status file.
	State(ctx context.Context) *InboxState
}
