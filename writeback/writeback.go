// Package writeback appends user-supplied Parquet files to Delta tables as
// blind appends: it validates each file against the table (schema, types,
// nulls, partition values), rewrites the footer to physical names under
// column mapping, uploads the data files under fresh unique names and
// commits them all as one new version with put-if-absent, retrying on lost
// races until Options.MaxRetry.
//
// What a commit holds (PROTOCOL.md "Add File and Remove File", "Additional
// Requirements for Writers", "Creation of New Log Entries"):
//   - commitInfo, always the first line: timestamp, operation WRITE,
//     operationParameters {mode: Append, partitionBy}, readVersion,
//     isolationLevel Serializable, isBlindAppend true, engineInfo, a txnId
//     unique per Append call, operationMetrics (numFiles, numOutputRows,
//     numOutputBytes, as strings like Spark), inCommitTimestamp when
//     in-commit timestamps are enabled, and "deltafs.sourceFiles": the
//     names the user gave the files, in commit order.
//   - a delta.rowTracking domainMetadata when row tracking is supported and
//     the high-water mark moves.
//   - one add per file: URL-encoded path, partitionValues keyed by physical
//     name, size, modificationTime, dataChange, stats from the footer,
//     baseRowId and defaultRowCommitVersion under row tracking.
//
// Files whose partition columns are present in the Parquet data are
// refused: the value comes from File.PartitionValues only. Data files are
// named <partition dirs>/part-00000-<uuid>-c000.<codec>.parquet; the
// partition dirs are Hive segments named by the physical column name.
//
// The package knows nothing of FUSE: callers map ErrInvalidFile,
// ErrNotWritable and delta.ErrConflict to their own error vocabulary.
package writeback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/pqfile"
)

var (
	// ErrInvalidFile reports a file that cannot be appended as it is: not
	// Parquet, a schema or type mismatch, nulls in a non-nullable column, a
	// row violating a CHECK constraint or a column invariant, a missing or
	// unparsable partition value. The wrapping error says which
	// file, column and expectation.
	ErrInvalidFile = errors.New("invalid file for append")
	// ErrNotWritable reports a table this package cannot append to; it
	// wraps the reason (usually a *delta.UnsupportedFeatureError).
	ErrNotWritable = errors.New("table is not writable")
)

// defaultMaxRetry bounds the time spent losing commit races.
const defaultMaxRetry = 30 * time.Second

// DefaultCommitTimeout is the default of Options.CommitTimeout.
const DefaultCommitTimeout = 5 * time.Minute

// ErrCommitTimeout is the cause of an Append that hit
// Options.CommitTimeout. Its outcome may be unknown (the error says).
var ErrCommitTimeout = errors.New("the commit did not finish within the commit timeout")

// Options tunes a Committer. Zero values take the defaults.
type Options struct {
	// EngineInfo is written as commitInfo.engineInfo, e.g. "deltafs/0.1.0".
	EngineInfo string
	// MaxRetry bounds the time one Append spends retrying lost races
	// (default 30s); past it the error wraps delta.ErrConflict.
	MaxRetry time.Duration
	// Logger receives checkpoint failures and retries (default slog.Default()).
	Logger *slog.Logger
	// Progress, when set, is called as data files upload with the user's
	// file name, the bytes sent so far and the total (-1 if unknown).
	Progress func(name string, done, total int64)
	// TempDir holds the re-encoded copies of files whose columns are
	// widened to the table's types, until their Append returns (default
	// os.TempDir()).
	TempDir string
	// OnCommit, when set, is called with each version this Committer
	// committed, once its commit exists (metrics).
	OnCommit func(version int64)
	// CommitTimeout caps one Append, uploads and retries included
	// (default DefaultCommitTimeout): past it the error wraps
	// ErrCommitTimeout and says whether the commit may have landed.
	// Each storage request has its own, shorter deadline (the store's
	// request timeout); this bounds the whole.
	CommitTimeout time.Duration
	// OnCheckpoint, when set, is called with each version whose checkpoint
	// this Committer wrote (in the background, after the commit's Append
	// returned).
	OnCheckpoint func(version int64)
	// OnConflict, when set, is called with each version this Committer
	// tried to commit and lost to another writer (it then retries on the
	// next one).
	OnConflict func(version int64)
	// ValidationBudget is the memory the decoding of appended files
	// (pqfile.Prove) shares with every other Committer given the same
	// budget; nil is pqfile's process-wide default of
	// pqfile.DefaultProveMemory bytes. A page that needs more than the
	// whole budget refuses its file.
	ValidationBudget *pqfile.Budget
}

// Committer appends files to one table. It is safe for concurrent use:
// concurrent Appends race on put-if-absent like separate processes and
// each lands in its own version.
type Committer struct {
	table *delta.Table
	store delta.Storage
	opts  Options
	log   *slog.Logger
	// budget bounds the memory of validations (nil: pqfile's default).
	budget *pqfile.Budget

	// turn serializes the commit attempts of this Committer's appends (a
	// channel of one token, taken with the caller's context): two of them
	// would race for the same version anyway, and queueing them here
	// instead of in the store's put-if-absent spares the loser a backoff
	// per version. It is held from reading the newest version to the put's
	// answer, never across a backoff or the reads that resolve a failed
	// put, so that one slow resolution does not stall the table's other
	// appends. Uploads run concurrently. Correctness never depends on it:
	// put-if-absent decides every race.
	turn chan struct{}

	// The background checkpoint writer (checkpointer.go), on bg, which
	// Close cancels (stop).
	bg        context.Context
	stop      context.CancelFunc
	cpWG      sync.WaitGroup
	cpMu      sync.Mutex
	cpWant    int64 // guarded by cpMu: the newest version a checkpoint is wanted for
	cpDone    int64 // guarded by cpMu: the newest version a checkpoint was written (or given up) for
	cpRunning bool  // guarded by cpMu: checkpointLoop runs
	closed    bool  // guarded by cpMu: Close was called
}

// New returns a Committer for table. It does no I/O. Close it to stop
// its background checkpoint writer.
func New(table *delta.Table, opts Options) *Committer {
	if opts.MaxRetry <= 0 {
		opts.MaxRetry = defaultMaxRetry
	}
	if opts.CommitTimeout <= 0 {
		opts.CommitTimeout = DefaultCommitTimeout
	}
	if opts.EngineInfo == "" {
		opts.EngineInfo = "deltafs"
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	bg, stop := context.WithCancel(context.Background())
	return &Committer{table: table, store: table.Storage(), opts: opts, log: log.With("table", table.Name()), budget: opts.ValidationBudget, turn: make(chan struct{}, 1),
		bg: bg, stop: stop, cpWant: -1, cpDone: -1}
}

// File is one Parquet file to append: a local file (staged by the
// caller), the name the user gave it, and the partition values (logical
// column name -> value, nil = null) taken from inbox/<col>=<v>/ dirs.
type File struct {
	LocalPath       string
	Name            string
	PartitionValues map[string]*string
	// Owned says the caller hands the file over: it is not modified after
	// Append returns, so a local table may take it by hard link instead
	// of a copy (the inbox's staged files). Files of `deltafs append` are
	// the user's and are copied.
	Owned bool
}

// Result is a successful Append: the new version and the storage keys of
// the data files it added, in the order of the files given.
type Result struct {
	Version int64
	Added   []string
}

// Validate checks a file against the latest snapshot without writing
// anything: nil means Append would accept it against that snapshot.
// Errors wrap ErrInvalidFile, ErrNotWritable or a storage error.
func (c *Committer) Validate(ctx context.Context, f File) error {
	snap, err := c.table.Latest(ctx)
	if err != nil {
		return err
	}
	if err := c.writable(snap); err != nil {
		return err
	}
	p, err := c.prepare(ctx, snap, f)
	if err == nil {
		p.cleanup()
	}
	return err
}

// Writable reports why the table cannot be appended to (nil = writable):
// delta.CheckWritable on the latest snapshot plus anything this package
// does not implement. The error wraps ErrNotWritable, or is a storage or
// log error when the latest snapshot cannot be read.
func (c *Committer) Writable(ctx context.Context) error {
	snap, err := c.current(ctx)
	if err != nil {
		return err
	}
	return c.writable(snap)
}

func (c *Committer) writable(snap *delta.Snapshot) error {
	p, m := snap.Protocol(), snap.Metadata()
	if err := delta.CheckWritable(snap.Table(), snap.Version(), p, m); err != nil {
		var ufe *delta.UnsupportedFeatureError
		if errors.As(err, &ufe) {
			return fmt.Errorf("%w: %w", ErrNotWritable, err)
		}
		return err
	}
	if rowTrackingActive(snap) && !p.HasWriterFeature("domainMetadata") {
		return fmt.Errorf("%w: table %s version %d: rowTracking without the domainMetadata feature",
			ErrNotWritable, snap.Table(), snap.Version())
	}
	if _, err := m.PartitionSchema(); err != nil {
		return fmt.Errorf("%w: table %s version %d: %w", ErrNotWritable, snap.Table(), snap.Version(), err)
	}
	schema, err := snap.Schema()
	if err != nil {
		return err
	}
	if err := checkFieldIDs(snap.ColumnMapping(), schema, nil); err != nil {
		return fmt.Errorf("%w: table %s version %d: %w", ErrNotWritable, snap.Table(), snap.Version(), err)
	}
	if _, err := clusteringColumns(snap, schema); err != nil {
		return fmt.Errorf("%w: table %s version %d: %w", ErrNotWritable, snap.Table(), snap.Version(), err)
	}
	cs, err := tableConstraints(m, schema)
	if err == nil {
		err = checkConstraintsCompile(cs, schema)
	}
	if err != nil {
		return fmt.Errorf("%w: table %s version %d: %w", ErrNotWritable, snap.Table(), snap.Version(), err)
	}
	return nil
}

// PartitionColumns returns the logical partition columns of the latest
// snapshot, in partitioning order, with their types.
func (c *Committer) PartitionColumns(ctx context.Context) ([]*delta.StructField, error) {
	snap, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	return snap.Metadata().PartitionSchema()
}

// current is the table's current snapshot as the mount last refreshed it
// (delta.Table.Current), read only when there is none yet: the checks of
// a create, mkdir or batch file cost no LIST (a 1,000-file batch made
// 1,000). Append itself validates against the newest version, so a
// metadata change since is still caught there.
func (c *Committer) current(ctx context.Context) (*delta.Snapshot, error) {
	if s := c.table.Current(); s != nil {
		return s, nil
	}
	return c.table.Latest(ctx)
}

// invalidf builds an error wrapping ErrInvalidFile.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidFile, fmt.Sprintf(format, args...))
}
