package delta

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Table reads one Delta table through a Storage. It caches snapshots,
// table states (decoded checkpoints and intermediate replay states) and
// parsed commits, all bounded in estimated bytes, so that asking for @v41
// after @v42 replays one commit on top of a cached state instead of the
// whole log. A Table is safe for concurrent use.
//
// Lock order: mu, then the caches' own locks; no lock is held across
// storage I/O.
type Table struct {
	store Storage
	name  string

	states  stateCache                         // snapshots and bare states (shared, see Caches)
	commits *budgetLRU[commitKey, *commitFile] // parsed commits (shared)
	flights flightGroup                        // builds in progress
	bad     badCheckpoints                     // checkpoints that failed to read, for a while
	icts    versionMemo[int64]                 // in-commit timestamps read, by version
	lines   versionMemo[int32]                 // history line lengths known from them (HistorySize)
	untimed versionMemo[int32]                 // history line lengths without their time, for file-timed versions (historysize.go)

	mu     sync.Mutex
	latest *Snapshot   // guarded by mu: newest snapshot built
	full   *logListing // guarded by mu: listing from version 0, once made
	// Concurrent Latest calls are coalesced (see Latest): running is the
	// call in flight, next the one its latecomers share.
	running, next *latestCall // guarded by mu
}

// Open returns a Table over store. It does no I/O: the first snapshot
// request reads the log (and reports ErrNotATable if there is none).
func Open(store Storage, opts Options) *Table {
	c := opts.Caches
	if c == nil {
		c = NewCaches(opts.StateBytes)
	}
	t := &Table{store: store, name: store.String(), states: stateCache{lru: c.states}, commits: c.commits}
	t.states.owner = t
	return t
}

// Name returns the table's location, for messages.
func (t *Table) Name() string { return t.name }

// Storage returns the table's storage.
func (t *Table) Storage() Storage { return t.store }

// Snapshot returns the snapshot at version (version < 0: the latest).
func (t *Table) Snapshot(ctx context.Context, version int64) (*Snapshot, error) {
	if version < 0 {
		return t.Latest(ctx)
	}
	return t.snapshot(ctx, version, nil)
}

// SnapshotAt resolves a spec (latest, vN or a timestamp) to a snapshot.
func (t *Table) SnapshotAt(ctx context.Context, spec Spec) (*Snapshot, error) {
	switch {
	case spec.Latest:
		return t.Latest(ctx)
	case spec.IsTime:
		v, err := t.VersionAt(ctx, spec.Time)
		if err != nil {
			return nil, err
		}
		return t.Snapshot(ctx, v)
	default:
		return t.Snapshot(ctx, spec.Version)
	}
}

func (t *Table) wrap(version int64, err error) error {
	var le *LogError
	if errors.As(err, &le) {
		return err
	}
	var ue *UnsupportedFeatureError
	if errors.As(err, &ue) {
		return err
	}
	return &LogError{Table: t.name, Version: version, Err: err}
}

// String implements fmt.Stringer.
func (t *Table) String() string { return fmt.Sprintf("delta table %s", t.name) }
