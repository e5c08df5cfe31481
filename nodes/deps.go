// Package nodes is the FUSE tree of a deltafs mount: the root, one
// directory per table, the @vN snapshot directories with their Hive layout,
// the data files, the @latest and @<timestamp> symlinks, the
// _history.jsonl file and the inbox/ where dropped Parquet files are
// staged and appended (through the Writer interface below).
//
// It knows Delta only through the engine's value types (snapshots, live
// files), asks package serve (through Files) for the bytes of data
// files, and reaches commits only through the Writer interface declared
// in this file, which the mount implements. Every errno is chosen in
// errno.go.
package nodes

import (
	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"syscall"
	"time"

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
	// Staging, when set, bounds the local disk taken by staged inbox
	// files: each write that grows a staged file reserves its growth,
	// and a file's bytes are given back when it leaves the inbox.
	Staging Budget
	// InboxStaleAfter: a staged file not committed (a temporary name, or
	// empty) and not written, truncated or renamed for this long, with
	// no open write handle, is removed without a commit, and so is an
	// empty scratch directory (SweepInbox). Zero means
	// DefaultInboxStaleAfter; negative never.
	InboxStaleAfter time.Duration
	// CommitTimeout caps the wait of a close() or rename() for its commit
	// (zero means DefaultCommitTimeout): past it the answer is EIO, the
	// reason in _status.jsonl (the outcome may be unknown).
	CommitTimeout time.Duration
}

// DefaultInboxStaleAfter is the default Options.InboxStaleAfter.
const DefaultInboxStaleAfter = time.Hour

// DefaultCommitTimeout is the default of Options.CommitTimeout.
const DefaultCommitTimeout = 5 * time.Minute

// Budget is a bound on local disk bytes shared with others (the mount wires the
// disk cache's, so staged inbox files and cached files share
// --cache-size). Implementations must be safe for concurrent use.
type Budget interface {
	// Reserve takes n bytes of the budget, or returns an error (wrapping
	// syscall.ENOSPC) saying why it cannot.
	Reserve(n int64) error
	// Release gives back n bytes taken by Reserve.
	Release(n int64)
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
	// mountID is the kernel's mnt_id of the mount (0 until SetMountID):
	// with it, a descriptor of another mount whose inode number matches
	// is not taken for one of ours (see holdsDescriptor).
	mountID atomic.Uint64
	// fdinfo says how the inbox recognizes a dup of a write handle
	// (probeFdinfo, at NewEnv; see holdsWriteDescriptor).
	fdinfo fdinfoIno
	// refusals rate-limits the log lines of writes refused with EROFS.
	refusals refusalLog
}

// FdinfoHasIno reports whether this kernel's /proc/PID/fdinfo names each
// descriptor's inode (Linux >= 5.14). Without it, the inbox recognizes a
// dup of a write descriptor by the path the kernel shows for it
// (/proc/PID/fd), which a process in another mount namespace or chroot
// may see otherwise: its dups are then not seen, and the first close of
// the opener commits the file and returns the outcome (later writes
// through a dup fail with EROFS). That never acknowledges a file before
// it is committed; the other choice (waiting for the last release) would.
func (e *Env) FdinfoHasIno() bool { return e.fdinfo == fdinfoHasIno }

// SetMountID records the kernel's mnt_id of the mount, once it is up.
func (e *Env) SetMountID(id uint64) { e.mountID.Store(id) }

// SetDirectIO says whether the kernel granted FUSE_DIRECT_IO_ALLOW_MMAP:
// then rewritten files are opened with FOPEN_DIRECT_IO (see DataFile.Open);
// otherwise (or until called) they use the page cache like stored files.
func (e *Env) SetDirectIO(ok bool) { e.directIO.Store(ok) }

// reserveStaging takes n bytes of the staging budget, if there is one.
func (e *Env) reserveStaging(n int64) error {
	if n <= 0 || e.Opts.Staging == nil {
		return nil
	}
	return e.Opts.Staging.Reserve(n)
}

// releaseStaging gives back n bytes taken by reserveStaging.
func (e *Env) releaseStaging(n int64) {
	if n > 0 && e.Opts.Staging != nil {
		e.Opts.Staging.Release(n)
	}
}

// NewEnv returns an Env with the defaults of opts filled in.
func NewEnv(opts Options) *Env {
	if opts.ShortTimeout <= 0 {
		opts.ShortTimeout = time.Second
	}
	if opts.LongTimeout <= 0 {
		opts.LongTimeout = time.Hour
	}
	if opts.CommitTimeout <= 0 {
		opts.CommitTimeout = DefaultCommitTimeout
	}
	if opts.InboxStaleAfter == 0 {
		opts.InboxStaleAfter = DefaultInboxStaleAfter
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Env{Opts: opts, log: log, fdinfo: probeFdinfo()}
}

// Errors a Writer returns, so that the inbox can choose the errno (see
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

// StagedFile is a complete local file the inbox asks a Writer to append.
type StagedFile struct {
	// LocalPath is the staged file on local disk; the Writer only reads it.
	LocalPath string
	// Name is the name the user gave the file (recorded in commitInfo).
	Name string
	// PartitionValues maps each partition column (logical name) to its
	// serialized value, nil for null; empty for unpartitioned tables.
	PartitionValues map[string]*string
}

// Writer appends files to one table; the mount wires writeback.Committer into
// it. Implementations must be safe for concurrent use.
type Writer interface {
	// Writable returns nil when files can be appended, else why not (an
	// error wrapping ErrNotWritable, or a storage error).
	Writable(ctx context.Context) error
	// PartitionColumns returns the partition columns in order, with their
	// logical names and types.
	PartitionColumns(ctx context.Context) ([]*delta.StructField, error)
	// Append validates the files and commits them all as ONE new version
	// of the table (a staged file, or every file of a batch directory),
	// returning that version once its commit exists. A refused file is an
	// error wrapping ErrInvalidFile that names every bad file, an
	// unwritable table one wrapping ErrNotWritable; anything else is
	// storage trouble. Nothing is committed on error. The inbox calls it
	// at most once per staged file and outcome: a refused file is only
	// handed again after a new rename.
	Append(ctx context.Context, files []StagedFile) (version int64, err error)
	// Check validates the files as Append would, writing nothing: nil, or
	// an error wrapping ErrInvalidFile that names every bad file (or
	// ErrNotWritable, or storage trouble). The inbox uses it to name all
	// the bad files of a batch that is refused for its layout too.
	Check(ctx context.Context, files []StagedFile) error
}
