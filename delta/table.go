package delta

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Options tunes a Table's caches. Zero values take the defaults.
type Options struct {
	// Snapshots is how many built snapshots are kept (default 16).
	Snapshots int
	// Checkpoints is how many decoded checkpoints are kept (default 4).
	Checkpoints int
	// Commits is how many parsed commit files are kept (default 4096).
	Commits int
}

// Table reads one Delta table through a Storage. It caches snapshots,
// decoded checkpoints and parsed commits, so that asking for @v41 after
// @v42 replays one commit on top of the cached checkpoint instead of the
// whole log. A Table is safe for concurrent use.
//
// Lock order: mu only; no lock is held across storage I/O.
type Table struct {
	store Storage
	name  string

	snapshots   *lru.Cache[int64, *Snapshot]
	checkpoints *lru.Cache[int64, *tableState]
	commits     *lru.Cache[int64, *commitFile]

	mu      sync.Mutex
	latest  *Snapshot              // guarded by mu: newest snapshot built
	full    *logListing            // guarded by mu: listing from version 0, once made
	bad     map[int64]bool         // guarded by mu: checkpoints that failed to read
	flights map[int64]*buildFlight // guarded by mu: builds in progress
}

// buildFlight coalesces concurrent builds of one version.
type buildFlight struct {
	done chan struct{}
	snap *Snapshot
	err  error
}

// Open returns a Table over store. It does no I/O: the first snapshot
// request reads the log (and reports ErrNotATable if there is none).
func Open(store Storage, opts Options) *Table {
	n := func(v, def int) int {
		if v <= 0 {
			return def
		}
		return v
	}
	snaps, _ := lru.New[int64, *Snapshot](n(opts.Snapshots, 16))
	cps, _ := lru.New[int64, *tableState](n(opts.Checkpoints, 4))
	commits, _ := lru.New[int64, *commitFile](n(opts.Commits, 4096))
	return &Table{
		store: store, name: store.String(),
		snapshots: snaps, checkpoints: cps, commits: commits,
		bad: map[int64]bool{}, flights: map[int64]*buildFlight{},
	}
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

// snapshot is Snapshot of a version >= 0, building it from hint (a listing
// just made, or nil) when that holds its segment.
func (t *Table) snapshot(ctx context.Context, version int64, hint *logListing) (*Snapshot, error) {
	if s, ok := t.snapshots.Get(version); ok {
		return s, nil
	}
	t.mu.Lock()
	if f, ok := t.flights[version]; ok {
		t.mu.Unlock()
		select {
		case <-f.done:
			return f.snap, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &buildFlight{done: make(chan struct{})}
	t.flights[version] = f
	t.mu.Unlock()

	f.snap, f.err = t.build(ctx, version, hint)
	if f.err == nil {
		t.snapshots.Add(version, f.snap)
	}
	t.mu.Lock()
	delete(t.flights, version)
	t.mu.Unlock()
	close(f.done)
	return f.snap, f.err
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

// Latest returns the newest snapshot, looking for commits after the last
// one it knows: one LIST from the next version, and only the new commits
// are replayed on top of the previous snapshot.
func (t *Table) Latest(ctx context.Context) (*Snapshot, error) {
	t.mu.Lock()
	prev := t.latest
	t.mu.Unlock()
	if prev == nil {
		return t.loadLatest(ctx)
	}
	l, err := listLog(ctx, t.store, prev.version+1)
	if err != nil {
		return nil, t.wrap(-1, err)
	}
	if l.maxV <= prev.version {
		return prev, nil
	}
	s, err := t.snapshot(ctx, l.maxV, l)
	if err != nil {
		return nil, err
	}
	t.setLatest(s)
	return s, nil
}

func (t *Table) setLatest(s *Snapshot) {
	t.mu.Lock()
	if t.latest == nil || s.version > t.latest.version {
		t.latest = s
	}
	t.mu.Unlock()
}

// loadLatest builds the first latest snapshot: from _last_checkpoint when
// it is usable, else from a listing of the whole log.
func (t *Table) loadLatest(ctx context.Context) (*Snapshot, error) {
	lc, ok, err := readLastCheckpoint(ctx, t.store)
	if err != nil {
		return nil, t.wrap(-1, err)
	}
	from := int64(0)
	if ok {
		from = lc.Version
	}
	l, err := listLog(ctx, t.store, from)
	if err != nil {
		return nil, t.wrap(-1, err)
	}
	if from > 0 && len(l.completeCheckpoint(from)) == 0 {
		// A stale or dangling hint: list the whole log.
		if l, err = listLog(ctx, t.store, 0); err != nil {
			return nil, t.wrap(-1, err)
		}
	}
	if l.latestVersion() < 0 {
		return nil, t.wrap(-1, t.notATable(ctx))
	}
	s, err := t.snapshot(ctx, l.latestVersion(), l)
	if err != nil {
		return nil, err
	}
	t.setLatest(s)
	return s, nil
}

// notATable tells an empty log apart from a missing one.
func (t *Table) notATable(ctx context.Context) error {
	objs, err := t.store.List(ctx, LogDir, "")
	if err == nil && len(objs) > 0 {
		for _, o := range objs {
			if f, ok := ParseLogName(path.Base(o.Key)); ok && f.Kind == KindMultiPartCheckpt {
				return corruptf("_delta_log holds no commit or complete checkpoint (%s is part %d of %d parts, not all present)", o.Key, f.Part, f.Parts)
			}
		}
		return corruptf("_delta_log holds no commit or checkpoint")
	}
	return ErrNotATable
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
