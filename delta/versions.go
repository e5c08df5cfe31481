package delta

import (
	"context"
	"time"
)

// VersionInfo describes one reconstructable version of a table.
type VersionInfo struct {
	Version int64
	// ModTime is the modification time of the commit file (zero when only
	// a checkpoint is left of that version).
	ModTime time.Time
}

// Versions lists every reconstructable version, oldest first: those with a
// complete checkpoint at or before them and contiguous commits up to them,
// or contiguous commits from version 0. It lists the whole log once, then
// only what is newer than the last listing.
func (t *Table) Versions(ctx context.Context) ([]VersionInfo, error) {
	l, err := t.fullListing(ctx)
	if err != nil {
		return nil, err
	}
	vs := l.reconstructable()
	out := make([]VersionInfo, len(vs))
	for i, v := range vs {
		out[i] = VersionInfo{Version: v, ModTime: l.commits[v].ModTime}
	}
	return out, nil
}

// fullListing returns a listing of the whole log, refreshed: the part
// after the newest known commit is listed again and merged.
func (t *Table) fullListing(ctx context.Context) (*logListing, error) {
	t.mu.Lock()
	prev := t.full
	t.mu.Unlock()
	if prev == nil {
		l, err := listLog(ctx, t.store, 0)
		if err != nil {
			return nil, t.wrap(-1, err)
		}
		if l.latestVersion() < 0 {
			return nil, t.wrap(-1, t.notATable(ctx))
		}
		t.rememberFull(l)
		return l, nil
	}
	tail, err := listLog(ctx, t.store, max(prev.maxV, 0))
	if err != nil {
		return nil, t.wrap(-1, err)
	}
	if tail.maxV <= prev.maxV && len(tail.checkpt) == len(prevCheckpointsFrom(prev, tail.from)) {
		return prev, nil
	}
	merged := &logListing{from: 0, commits: map[int64]LogFile{}, checkpt: map[int64][]LogFile{}, maxV: max(prev.maxV, tail.maxV)}
	for v, f := range prev.commits {
		merged.commits[v] = f
	}
	for v, f := range prev.checkpt {
		merged.checkpt[v] = f
	}
	for v, f := range tail.commits {
		merged.commits[v] = f
	}
	for v, f := range tail.checkpt {
		merged.checkpt[v] = f
	}
	t.mu.Lock()
	t.full = merged
	t.mu.Unlock()
	return merged, nil
}

func prevCheckpointsFrom(l *logListing, from int64) map[int64][]LogFile {
	out := map[int64][]LogFile{}
	for v, f := range l.checkpt {
		if v >= from {
			out[v] = f
		}
	}
	return out
}
