package delta

// One snapshot build, read top to bottom: snapshot looks in the state
// cache and runs one build per version however many callers ask (the
// flight group); build plans the version's log segment (planner.go,
// listing the log when the planner asks), takes the base state (the
// nearest cached state, else the checkpoint), replays the commits after
// it, validates the result, and snapshot caches it.

import (
	"context"
	"errors"
	"fmt"
)

// snapshot returns the snapshot of version v >= 0 from the cache, or
// builds it from hint (a listing just made, or nil) when that holds its
// segment. Concurrent requests of one version share one build (see
// flightGroup).
func (t *Table) snapshot(ctx context.Context, v int64, hint *logListing) (*Snapshot, error) {
	if s, ok := t.states.snapshot(v); ok {
		return s, nil
	}
	return t.flights.do(ctx, v, func() (*Snapshot, error) {
		if s, ok := t.states.snapshot(v); ok { // built while this caller waited on a build that was abandoned
			return s, nil
		}
		s, err := t.build(ctx, v, hint)
		if err == nil {
			t.states.addSnapshot(s)
		}
		return s, err
	})
}

// build reconstructs the snapshot of version v.
//
// A checkpoint that cannot be read is marked bad and the version is
// planned again without it; when that fails too (the commits before it
// were cleaned up), the error says why the checkpoint was refused as well,
// and wraps its ErrCorruptLog: a missing commit is not the table's real
// trouble.
func (t *Table) build(ctx context.Context, v int64, hint *logListing) (*Snapshot, error) {
	var skipped error // why the checkpoints given up so far could not be read
	fail := func(err error) (*Snapshot, error) {
		if skipped != nil {
			err = fmt.Errorf("%w; without the checkpoints that could not be read: %w", skipped, err)
		}
		return nil, t.wrap(v, err)
	}
	for attempt := 0; ; attempt++ {
		// 1. Plan: the checkpoint and the commits v is built from.
		seg, l, err := t.plan(ctx, v, hint)
		hint = nil // a retry (after a bad checkpoint) lists again
		if err != nil {
			return fail(err)
		}
		// 2. Base: the nearest cached state, else the checkpoint.
		b, err := t.baseState(ctx, seg)
		if err != nil {
			if (errors.Is(err, ErrCorruptLog) || errors.Is(err, ErrNotExist)) && attempt < 8 && seg.CheckpointVersion >= 0 {
				t.bad.mark(seg.CheckpointVersion)
				if skipped == nil {
					skipped = fmt.Errorf("checkpoint %d: %w", seg.CheckpointVersion, err)
				}
				continue
			}
			return fail(err)
		}
		// 3. Replay the commits after the base.
		st, key, commit, err := t.applyCommits(ctx, seg, l, b)
		if err != nil {
			return nil, t.wrap(v, err)
		}
		// 4. Validate.
		snap, err := t.finish(ctx, v, st, commit, key)
		if err != nil {
			return nil, err
		}
		t.statOwnCommit(ctx, seg)
		snap.segment = seg
		return snap, nil
	}
}

// plan returns v's segment and the listing it came from, making the
// listings the planner asks for: from _last_checkpoint's version, then
// further back until v's checkpoint (or version 0) is in one.
func (t *Table) plan(ctx context.Context, v int64, hint *logListing) (*LogSegment, *logListing, error) {
	p := t.planner()
	if seg, l, ok, err := p.known(v, hint); ok {
		if err == nil && l == hint && hint.from == 0 {
			t.rememberFull(hint)
		}
		return seg, l, err
	}
	lc, hasLC, err := readLastCheckpoint(ctx, t.store)
	if err != nil {
		return nil, nil, err
	}
	for from := p.firstListing(v, lc, hasLC); ; {
		l, err := listLog(ctx, t.store, from)
		if err != nil {
			return nil, nil, err
		}
		seg, next, err := p.fromListing(v, l)
		if next < 0 {
			if err == nil && from == 0 {
				t.rememberFull(l)
			}
			return seg, l, err
		}
		from = next
	}
}

// planner returns a planner holding what the table knows of its log now.
func (t *Table) planner() *segmentPlanner {
	p := &segmentPlanner{bad: t.bad.live()}
	t.mu.Lock()
	defer t.mu.Unlock()
	p.full = t.full
	if t.latest != nil {
		p.latest = t.latest.segment
	}
	return p
}

func (t *Table) rememberFull(l *logListing) {
	t.mu.Lock()
	if t.full == nil || l.maxV > t.full.maxV {
		t.full = l
	}
	t.mu.Unlock()
}

// base is the state a build replays onto: a cached state, a checkpoint
// read now, or the empty state before version 0 (version -1).
type base struct {
	state   *tableState
	version int64
	key     stateKey // its cache entry, noBase for the empty state
}

// baseState returns the nearest cached state at or before the segment's
// version and not before its checkpoint, else the checkpoint read now
// (and cached), else the empty state when there is no checkpoint.
func (t *Table) baseState(ctx context.Context, seg *LogSegment) (base, error) {
	if st, k, ok := t.states.nearest(seg.CheckpointVersion, seg.Version); ok {
		return base{st, k.version, k}, nil
	}
	if seg.CheckpointVersion < 0 {
		return base{newTableState(), -1, noBase}, nil
	}
	st, err := readCheckpoint(ctx, t.store, seg.Checkpoint)
	if err != nil {
		return base{}, err
	}
	k := t.states.addState(seg.CheckpointVersion, st, noBase)
	return base{st, seg.CheckpointVersion, k}, nil
}

// stateInterval is how many commits a long replay (a version far from any
// checkpoint) applies between the intermediate states it keeps, so that the
// versions around it are built from the nearest state instead of replaying
// from the checkpoint (or version 0) again.
const stateInterval = 1000

// applyCommits replays the segment's commits after the base onto it and
// returns the state, the cache key of the state it shares (the base, or
// the last intermediate state kept) and the version's own commit (nil
// when unreadable and not needed). A long replay keeps a bare state every
// stateInterval commits, and each chunk's commit files are read,
// concurrently, only when that chunk is applied, so that memory holds one
// chunk of parsed commits at a time.
func (t *Table) applyCommits(ctx context.Context, seg *LogSegment, l *logListing, b base) (*tableState, stateKey, *commitFile, error) {
	var todo []LogFile
	for _, c := range seg.Commits {
		if c.Version > b.version {
			todo = append(todo, c)
		}
	}
	if len(todo) == 0 {
		// The commit of the version itself carries its commitInfo and
		// time, even when the version is a checkpoint. A corrupt or
		// vanished commit file is tolerated (the checkpoint holds the
		// state); a failed read is not, or the snapshot would be cached
		// without them.
		if f, ok := l.commits.get(seg.Version); ok {
			c, err := t.readCommitCached(ctx, f)
			if err == nil {
				return b.state, b.key, c, nil
			}
			if !errors.Is(err, ErrCorruptLog) && !errors.Is(err, ErrNotExist) {
				return nil, noBase, nil, err
			}
		}
		return b.state, b.key, nil, nil
	}
	st, key := b.state, b.key
	var last *commitFile
	for len(todo) > 0 {
		n := min(len(todo), stateInterval)
		commits, err := readCommits(ctx, todo[:n], t.readCommitCached)
		if err != nil {
			return nil, noBase, nil, err
		}
		todo, last = todo[n:], commits[n-1]
		st = replay(st, commits)
		if len(todo) > 0 {
			key = t.states.addState(last.version, st, key)
		}
	}
	return st, key, last, nil
}

func (t *Table) readCommitCached(ctx context.Context, f LogFile) (*commitFile, error) {
	if c, ok := t.commits.Get(commitKey{t, f.Version}); ok && c.file.Key == f.Key {
		return c, nil
	}
	c, err := readCommit(ctx, t.store, f)
	if err != nil {
		return nil, err
	}
	t.commits.Add(commitKey{t, f.Version}, c, c.bytes())
	return c, nil
}

// finish validates the reconciled state of version v and wraps it as a
// Snapshot sharing the cache entry shared.
func (t *Table) finish(ctx context.Context, v int64, st *tableState, commit *commitFile, shared stateKey) (*Snapshot, error) {
	if st.protocol == nil {
		return nil, &LogError{Table: t.name, Version: v, Err: corruptf("no protocol action in the log up to this version")}
	}
	if st.metadata == nil {
		return nil, &LogError{Table: t.name, Version: v, Err: corruptf("no metaData action in the log up to this version")}
	}
	if err := CheckReadable(t.name, v, st.protocol, st.metadata); err != nil {
		return nil, err
	}
	if commit != nil && commit.file.ModTime.IsZero() {
		// Listed by name (a local log): the commit time is its file's.
		if o, err := t.store.Stat(ctx, commit.file.Key); err == nil {
			c := *commit
			c.file.ModTime = o.ModTime
			commit = &c
		}
	}
	s := newSnapshot(t, v, st, commit)
	s.base = shared
	return s, nil
}

// statOwnCommit fills in the size and time of the version's own commit
// file in its segment when the listing was by name (NameLister), so that
// a later refresh can tell that commit was rewritten (stillListed). A
// failed stat leaves them unknown, which only loses that check.
func (t *Table) statOwnCommit(ctx context.Context, seg *LogSegment) {
	f := &seg.CheckpointCommit
	if n := len(seg.Commits); n > 0 {
		f = &seg.Commits[n-1]
	}
	if f.Key == "" || f.Version != seg.Version || !f.ModTime.IsZero() {
		return
	}
	if o, err := t.store.Stat(ctx, f.Key); err == nil {
		f.Size, f.ModTime = o.Size, o.ModTime
	}
}
