package delta

// The newest version: Latest looks for commits after the newest snapshot
// built, lists only from there, and coalesces concurrent looks.

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"
)

// latestCall is one look for new commits, shared by the Latest calls that
// arrived before it started.
type latestCall struct {
	done chan struct{}
	snap *Snapshot // set before done is closed
	err  error
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
