package delta

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// VersionAt returns the version of the table as of time ts: the latest
// version whose commit time is at or before ts. Commit times are in-commit
// timestamps where they are enabled, else commit file modification times
// made strictly increasing (each one at least 1 ms after the previous), as
// Spark and Delta Kernel do. ts before the first reconstructable commit or
// in the future is ErrVersionNotFound; ts after the last commit (but not in
// the future) gives the last version.
func (t *Table) VersionAt(ctx context.Context, ts time.Time) (int64, error) {
	if ts.After(time.Now()) {
		return 0, t.wrap(-1, fmt.Errorf("%w: %s is in the future", ErrVersionNotFound, ts.UTC().Format(time.RFC3339Nano)))
	}
	latest, err := t.Latest(ctx)
	if err != nil {
		return 0, err
	}
	l, err := t.fullListing(ctx)
	if err != nil {
		return 0, err
	}
	var cands []int64 // reconstructable versions with a commit file, ascending
	for _, v := range l.reconstructable() {
		if _, ok := l.commits[v]; ok {
			cands = append(cands, v)
		}
	}
	mtimes := monotonicMTimes(l)
	md := latest.Metadata()
	ictFrom := int64(-1) // first version using in-commit timestamps
	if md.InCommitTimestampsEnabled() {
		ictFrom = 0
		if ev, ets, ok := md.ICTEnablement(); ok {
			ictFrom = ev
			if ts.UnixMilli() < ets {
				ictFrom = -1
				cands = versionsBelow(cands, ev)
			}
		}
	}
	if ictFrom >= 0 {
		cands = versionsAtOrAbove(cands, ictFrom)
	}
	var readErr error
	timeOf := func(v int64) int64 {
		if ictFrom < 0 || v < ictFrom {
			return mtimes[v]
		}
		ict, err := t.commitICT(ctx, l.commits[v])
		if err != nil && readErr == nil {
			readErr = err
		}
		return ict
	}
	target := ts.UnixMilli()
	i := sort.Search(len(cands), func(i int) bool { return timeOf(cands[i]) > target })
	if readErr != nil {
		return 0, t.wrap(-1, readErr)
	}
	if i == 0 {
		return 0, t.wrap(-1, fmt.Errorf("%w: %s is before the earliest available commit", ErrVersionNotFound, ts.UTC().Format(time.RFC3339Nano)))
	}
	return cands[i-1], nil
}

// monotonicMTimes returns, per commit version of the listing, its file
// modification time in ms, adjusted to be strictly increasing.
func monotonicMTimes(l *logListing) map[int64]int64 {
	vs := make([]int64, 0, len(l.commits))
	for v := range l.commits {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	out := make(map[int64]int64, len(vs))
	prev := int64(-1 << 62)
	for _, v := range vs {
		ms := l.commits[v].ModTime.UnixMilli()
		if ms <= prev {
			ms = prev + 1
		}
		out[v], prev = ms, ms
	}
	return out
}

// commitICT reads the in-commit timestamp of a commit.
func (t *Table) commitICT(ctx context.Context, f LogFile) (int64, error) {
	c, err := t.readCommitCached(ctx, f)
	if err != nil {
		return 0, err
	}
	for _, a := range c.actions {
		if a.CommitInfo != nil {
			if ict, ok := inCommitTimestamp(a.CommitInfo); ok {
				return ict, nil
			}
			break
		}
	}
	return 0, corruptf("commit %d has no inCommitTimestamp although in-commit timestamps are enabled", f.Version)
}

func versionsBelow(vs []int64, limit int64) []int64 {
	i := sort.Search(len(vs), func(i int) bool { return vs[i] >= limit })
	return vs[:i]
}

func versionsAtOrAbove(vs []int64, limit int64) []int64 {
	i := sort.Search(len(vs), func(i int) bool { return vs[i] >= limit })
	return vs[i:]
}
