package delta

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// build reconstructs the snapshot of one version: find its log segment,
// start from the best cached state (a snapshot between the checkpoint and
// the version, a decoded checkpoint, or the checkpoint file), replay the
// remaining commits and check the protocol. A listing the caller just made
// (hint, may be nil) is used when it holds v's whole segment, saving the
// _last_checkpoint read and the LIST of findSegment.
//
// A checkpoint that cannot be read is marked bad and the version is built
// without it; when that fails too (the commits before it were cleaned
// up), the error says why the checkpoint was refused as well, and wraps
// its ErrCorruptLog: a missing commit is not the table's real trouble.
func (t *Table) build(ctx context.Context, v int64, hint *logListing) (*Snapshot, error) {
	var skipped error // why the checkpoints given up so far could not be read
	fail := func(err error) (*Snapshot, error) {
		if skipped != nil {
			err = fmt.Errorf("%w; without the checkpoints that could not be read: %w", skipped, err)
		}
		return nil, t.wrap(v, err)
	}
	for attempt := 0; ; attempt++ {
		seg, l, err := t.segmentOf(ctx, v, hint)
		hint = nil // a retry (after a bad checkpoint) lists again
		if err != nil {
			return fail(err)
		}
		base, baseV, baseKey, err := t.baseState(ctx, seg)
		if err != nil {
			if errors.Is(err, ErrCorruptLog) || errors.Is(err, ErrNotExist) {
				if attempt < 8 && seg.CheckpointVersion >= 0 {
					// Unreadable checkpoint: remember it and use an older one.
					t.bad.mark(seg.CheckpointVersion)
					if skipped == nil {
						skipped = fmt.Errorf("checkpoint %d: %w", seg.CheckpointVersion, err)
					}
					continue
				}
			}
			return fail(err)
		}
		snap, err := t.replayOnto(ctx, seg, l, base, baseV, baseKey)
		if err == nil {
			t.statOwnCommit(ctx, seg)
			snap.segment = seg
		}
		return snap, err
	}
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

// replayOnto applies the segment's commits after baseV to base. A long
// replay keeps a bare state every stateInterval commits (see
// stateInterval), and each chunk's commit files are read, concurrently,
// only when that chunk is applied, so that memory holds one chunk of
// parsed commits at a time.
func (t *Table) replayOnto(ctx context.Context, seg *LogSegment, l *logListing, base *tableState, baseV int64, baseKey stateKey) (*Snapshot, error) {
	v := seg.Version
	var todo []LogFile
	for _, c := range seg.Commits {
		if c.Version > baseV {
			todo = append(todo, c)
		}
	}
	// The commit of the version itself carries its commitInfo and time,
	// even when the version is a checkpoint. A corrupt or vanished commit
	// file is tolerated (the checkpoint holds the state); a failed read is
	// not, or the snapshot would be cached without them.
	if len(todo) == 0 {
		if f, ok := l.commits.get(v); ok {
			c, err := t.readCommitCached(ctx, f)
			if err == nil {
				return t.finish(ctx, v, base, c, baseKey)
			}
			if !errors.Is(err, ErrCorruptLog) && !errors.Is(err, ErrNotExist) {
				return nil, t.wrap(v, err)
			}
		}
		return t.finish(ctx, v, base, nil, baseKey)
	}
	st, key := base, baseKey
	var last *commitFile
	for len(todo) > 0 {
		n := min(len(todo), stateInterval)
		commits, err := readCommits(ctx, todo[:n], t.readCommitCached)
		if err != nil {
			return nil, t.wrap(v, err)
		}
		todo, last = todo[n:], commits[n-1]
		st = replay(st, commits)
		if len(todo) > 0 {
			t.cacheState(last.version, st, key)
			key = stateKey{t: t, version: last.version}
		}
	}
	return t.finish(ctx, v, st, last, key)
}

// finish validates the reconciled state and wraps it as a Snapshot.
func (t *Table) finish(ctx context.Context, v int64, st *tableState, commit *commitFile, base stateKey) (*Snapshot, error) {
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
	s.base = base
	return s, nil
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

// baseState returns the state to replay the segment's commits onto, the
// version it stands for and its cache key: the nearest cached state at or
// before the version (and not before the checkpoint), else the checkpoint
// read now; an empty state at -1 when there is no checkpoint.
func (t *Table) baseState(ctx context.Context, seg *LogSegment) (*tableState, int64, stateKey, error) {
	if st, k, ok := t.nearestState(seg.CheckpointVersion, seg.Version); ok {
		return st, k.version, k, nil
	}
	if seg.CheckpointVersion < 0 {
		return newTableState(), -1, noBase, nil
	}
	st, err := readCheckpoint(ctx, t.store, seg.Checkpoint)
	if err != nil {
		return nil, 0, noBase, err
	}
	k := stateKey{t: t, version: seg.CheckpointVersion}
	t.cacheState(k.version, st, noBase)
	return st, k.version, k, nil
}

// segmentOf returns v's segment from hint when it holds all of it, else
// from findSegment.
func (t *Table) segmentOf(ctx context.Context, v int64, hint *logListing) (*LogSegment, *logListing, error) {
	if hint != nil {
		bad := t.bad.live()
		seg, err := hint.segment(v, bad)
		if errors.Is(err, errNeedEarlier) {
			seg, err = t.extendLatest(hint, v, bad)
		}
		if err == nil {
			if hint.from == 0 {
				t.rememberFull(hint)
			}
			return seg, hint, nil
		}
	}
	return t.findSegment(ctx, v)
}

// extendLatest returns v's segment as the latest snapshot's segment plus the
// commits of hint, a listing that starts at or right after the latest
// version (a refresh): no checkpoint was written since, so the segment keeps the
// latest's checkpoint. It fails (the caller then lists) when there is no such
// snapshot, its checkpoint went bad, or hint's commits are not contiguous.
func (t *Table) extendLatest(hint *logListing, v int64, bad map[int64]bool) (*LogSegment, error) {
	t.mu.Lock()
	prev := t.latest
	t.mu.Unlock()
	if prev == nil || prev.segment == nil || hint.from < prev.version || hint.from > prev.version+1 || v <= prev.version ||
		bad[prev.segment.CheckpointVersion] {
		return nil, errNeedEarlier
	}
	seg := &LogSegment{Version: v, CheckpointVersion: prev.segment.CheckpointVersion, Checkpoint: prev.segment.Checkpoint,
		CheckpointCommit: prev.segment.CheckpointCommit}
	seg.Commits = slices.Clone(prev.segment.Commits)
	for c := prev.version + 1; c <= v; c++ {
		f, ok := hint.commits.get(c)
		if !ok {
			return nil, errNeedEarlier
		}
		seg.Commits = append(seg.Commits, f)
	}
	return seg, nil
}

// findSegment lists the log around v and returns v's segment. It starts
// from _last_checkpoint when that is at or before v, and otherwise lists
// backwards in growing windows until a checkpoint (or version 0) is found,
// so that a long log is never listed whole when a checkpoint is known.
func (t *Table) findSegment(ctx context.Context, v int64) (*LogSegment, *logListing, error) {
	t.mu.Lock()
	full := t.full
	t.mu.Unlock()
	bad := t.bad.live()
	if full != nil && v <= full.maxV {
		seg, err := full.segment(v, bad)
		return seg, full, err
	}
	from := int64(0)
	if lc, ok, err := readLastCheckpoint(ctx, t.store); err != nil {
		return nil, nil, err
	} else if ok && lc.Version <= v && !bad[lc.Version] {
		from = lc.Version
	} else {
		from = max(0, v-1000)
	}
	for window := int64(1000); ; window *= 4 {
		l, err := listLog(ctx, t.store, from)
		if err != nil {
			return nil, nil, err
		}
		seg, err := l.segment(v, bad)
		if !errors.Is(err, errNeedEarlier) {
			if from == 0 && err == nil {
				t.rememberFull(l)
			}
			return seg, l, err
		}
		if from == 0 {
			return nil, nil, &VersionNotFoundError{Version: v, Latest: l.latestVersion(), Reason: "no checkpoint at or before it and commit 0 is gone (log cleaned up?)"}
		}
		from = max(0, from-window)
	}
}

func (t *Table) rememberFull(l *logListing) {
	t.mu.Lock()
	if t.full == nil || l.maxV > t.full.maxV {
		t.full = l
	}
	t.mu.Unlock()
}
