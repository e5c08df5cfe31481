package delta

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"
)

// Options tunes a Table's caches. Zero values take the defaults.
type Options struct {
	// Caches is the memory the table's snapshots, states and parsed
	// commits live in, shared with the other tables given the same Caches
	// (a mount's). Nil: a Caches of the table's own, of StateBytes.
	Caches *Caches
	// StateBytes is the budget of the table's own Caches when Caches is
	// nil (default DefaultStateBytes).
	StateBytes int64
}

// DefaultStateBytes is the default budget of a Caches.
const DefaultStateBytes = 512 << 20

// Caches holds, under byte budgets, what the Tables sharing it keep in
// memory: built snapshots and bare table states (decoded checkpoints,
// intermediate states of long replays) under one budget, parsed commit
// files under an eighth of it. Costs are estimates (see memsize.go). It is
// safe for concurrent use.
type Caches struct {
	budget  int64
	states  *budgetLRU[stateKey, *cachedState]
	commits *budgetLRU[commitKey, *commitFile]
}

// maxStates bounds the number of snapshots and states kept, whatever
// their size: builds scan the keys for the nearest state.
const maxStates = 256

// NewCaches returns Caches with a budget of stateBytes (<= 0: the default)
// for snapshots and states, and an eighth of it for parsed commits.
func NewCaches(stateBytes int64) *Caches {
	if stateBytes <= 0 {
		stateBytes = DefaultStateBytes
	}
	return &Caches{
		budget:  stateBytes,
		states:  newBudgetLRU[stateKey, *cachedState](stateBytes, maxStates),
		commits: newBudgetLRU[commitKey, *commitFile](stateBytes/8, 1<<20),
	}
}

// CacheUsage is what a Caches holds.
type CacheUsage struct {
	Budget      int64 `json:"budgetBytes"` // for snapshots and states
	StateBytes  int64 `json:"stateBytes"`  // estimated bytes of snapshots and states
	States      int   `json:"states"`      // snapshots and states kept
	CommitBytes int64 `json:"commitBytes"` // estimated bytes of parsed commits
	Commits     int   `json:"commits"`     // parsed commits kept
}

// Usage reports what the caches hold now.
func (c *Caches) Usage() CacheUsage {
	u := CacheUsage{Budget: c.budget}
	u.StateBytes, u.States = c.states.Usage()
	u.CommitBytes, u.Commits = c.commits.Usage()
	return u
}

// stateInterval is how many commits a long replay (a version far from any
// checkpoint) applies between the intermediate states it keeps, so that the
// versions around it are built from the nearest state instead of replaying
// from the checkpoint (or version 0) again.
const stateInterval = 1000

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

	states  *budgetLRU[stateKey, *cachedState] // snapshots and bare states (shared, see Caches)
	commits *budgetLRU[commitKey, *commitFile] // parsed commits (shared)

	bad badCheckpoints // checkpoints that failed to read, for a while (own lock)

	mu      sync.Mutex
	latest  *Snapshot              // guarded by mu: newest snapshot built
	full    *logListing            // guarded by mu: listing from version 0, once made
	flights map[int64]*buildFlight // guarded by mu: builds in progress
	icts    map[int64]int64        // guarded by mu: in-commit timestamps read, by version
	lines   map[int64]int32        // guarded by mu: history line lengths known from them (HistorySize)
	// Concurrent Latest calls are coalesced (see Latest): running is the
	// call in flight, next the one its latecomers share.
	running, next *latestCall // guarded by mu
}

// latestCall is one look for new commits, shared by the Latest calls that
// arrived before it started.
type latestCall struct {
	done chan struct{}
	snap *Snapshot // set before done is closed
	err  error
}

// buildFlight coalesces concurrent builds of one version. snap, err and
// abandoned are set before done is closed.
type buildFlight struct {
	done      chan struct{}
	snap      *Snapshot
	err       error
	abandoned bool // the build failed because its caller's context ended
	waiters   int  // guarded by Table.mu: requests that joined it
}

// Open returns a Table over store. It does no I/O: the first snapshot
// request reads the log (and reports ErrNotATable if there is none).
func Open(store Storage, opts Options) *Table {
	c := opts.Caches
	if c == nil {
		c = NewCaches(opts.StateBytes)
	}
	return &Table{
		store: store, name: store.String(),
		states: c.states, commits: c.commits,
		flights: map[int64]*buildFlight{}, icts: map[int64]int64{}, lines: map[int64]int32{},
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
// just made, or nil) when that holds its segment. Concurrent requests of
// one version share one build; a build that failed because its caller's
// context ended is abandoned, and a waiter whose own context is live
// builds the version itself, so one interrupted reader never fails the
// others.
func (t *Table) snapshot(ctx context.Context, version int64, hint *logListing) (*Snapshot, error) {
	for {
		if s, ok := t.cachedSnapshot(version); ok {
			return s, nil
		}
		t.mu.Lock()
		if f, ok := t.flights[version]; ok {
			f.waiters++
			t.mu.Unlock()
			select {
			case <-f.done:
				if f.abandoned {
					continue
				}
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
			t.cacheSnapshot(f.snap)
		}
		f.abandoned = f.err != nil && ctx.Err() != nil
		t.mu.Lock()
		delete(t.flights, version)
		t.mu.Unlock()
		close(f.done)
		return f.snap, f.err
	}
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
//
// Concurrent calls are coalesced without returning anything older than
// the caller's arrival: a call arriving while a look is in flight (it may
// have listed before a commit the caller knows of) waits for it, then
// shares the next look with every other latecomer. N callers make at most
// two LISTs. A waiter whose leader was cancelled looks itself.
func (t *Table) Latest(ctx context.Context) (*Snapshot, error) {
	t.mu.Lock()
	if t.running == nil {
		// Nothing in flight: run the pending shared look if there is one
		// (its callers arrived before now), else a fresh one.
		c := t.next
		if c == nil {
			c = &latestCall{done: make(chan struct{})}
		}
		t.running, t.next = c, nil
		t.mu.Unlock()
		return t.lead(ctx, c)
	}
	if t.next == nil {
		t.next = &latestCall{done: make(chan struct{})}
	}
	prev, mine := t.running, t.next
	t.mu.Unlock()
	select {
	case <-prev.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	t.mu.Lock()
	if t.next == mine && t.running == nil {
		t.running, t.next = mine, nil
		t.mu.Unlock()
		return t.lead(ctx, mine)
	}
	t.mu.Unlock() // another caller leads mine (whoever set running took next)
	select {
	case <-mine.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if mine.err != nil && isCancellation(mine.err) && ctx.Err() == nil {
		return t.Latest(ctx) // the leader was interrupted, not this caller
	}
	return mine.snap, mine.err
}

// lead runs the look c for the callers sharing it.
func (t *Table) lead(ctx context.Context, c *latestCall) (*Snapshot, error) {
	c.snap, c.err = t.latestOnce(ctx)
	t.mu.Lock()
	t.running = nil
	t.mu.Unlock()
	close(c.done)
	return c.snap, c.err
}

func isCancellation(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// latestOnce is one look for new commits (see Latest).
func (t *Table) latestOnce(ctx context.Context) (*Snapshot, error) {
	t.mu.Lock()
	prev := t.latest
	t.mu.Unlock()
	if prev == nil {
		return t.loadLatest(ctx)
	}
	// List from prev's own version: its commit (or checkpoint) must still
	// be there, or the log prev was built from is gone.
	l, err := listLog(ctx, t.store, prev.version)
	if err != nil {
		return nil, t.wrap(-1, err)
	}
	if i := l.commits.find(prev.version); i >= 0 {
		if _, err := l.fillTime(ctx, t.store, i); err != nil && !errors.Is(err, ErrNotExist) {
			return nil, t.wrap(-1, err)
		}
	}
	if err := prev.stillListed(l); err != nil {
		return nil, t.wrap(prev.version, err)
	}
	if l.maxV <= prev.version {
		return prev, nil
	}
	s, err := t.snapshot(ctx, l.maxV, l)
	if err != nil {
		return nil, err
	}
	if was, now := prev.Metadata().ID, s.Metadata().ID; was != now {
		return nil, t.wrap(s.version, fmt.Errorf("%w: version %d has metaData.id %s, version %d had %s: another table now lives here", ErrTableChanged, s.version, now, prev.version, was))
	}
	t.setLatest(s)
	return s, nil
}

// stillListed returns an error wrapping ErrTableChanged unless the listing
// l (from s's version on) still holds s's own commit (or checkpoint) as s
// read it: same size and modification time. Otherwise the log s was built
// from is gone or was rewritten (the table deleted, moved or replaced),
// and extending s would mix two tables.
func (s *Snapshot) stillListed(l *logListing) error {
	v := s.version
	f, ok := l.commits.get(v)
	if !ok && len(l.checkpt[v]) == 0 {
		return fmt.Errorf("%w: version %d, the newest this reader saw, is no longer in the log (the table was deleted, moved or replaced)", ErrTableChanged, v)
	}
	if !ok || s.segment == nil {
		return nil
	}
	var old LogFile
	if n := len(s.segment.Commits); n > 0 {
		old = s.segment.Commits[n-1]
	} else {
		old = s.segment.CheckpointCommit
	}
	if old.Version == v && old.Key != "" && (old.Size != f.Size || !old.ModTime.Equal(f.ModTime)) {
		return fmt.Errorf("%w: commit %d was rewritten (%d bytes at %s, was %d bytes at %s)", ErrTableChanged, v, f.Size, f.ModTime.UTC().Format(time.RFC3339Nano), old.Size, old.ModTime.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// Current returns the newest snapshot already built (by Latest, or by a
// reader asking for a newer version), without any I/O; nil before the
// first. It is at most as old as the caller's last Latest: callers that
// must see every commit (a commit's own retry loop) use Latest.
func (t *Table) Current() *Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.latest
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
