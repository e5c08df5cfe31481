package delta

// The size of _history.jsonl without holding it: each version's line is
// counted from its commitInfo and dropped. A line whose time is the
// commit file's (no in-commit timestamp) is its commitInfo's part, kept
// per version as a length once read (untimed), plus the text of its
// monotonized file time, which is known only once every commit's time is:
// so the commitInfos can be read early (a listing of the table's versions
// reads them a batch at a time, learning the times with them) and the
// size summed later without reading anything again.

import (
	"context"
	"time"
)

// HistorySize returns the byte size of the _history.jsonl lines of the
// versions in [from, to] whose commit files exist (AppendLine's lines).
// A line depends on its commitInfo and its time: the line of a version
// whose time is its in-commit timestamp is kept whole when the commit is
// first read (knownLine); the others' lines are kept without their time
// (untimedLine), read in parallel batches where not known yet, and their
// times added from the listing. What is kept is a length a version.
func (t *Table) HistorySize(ctx context.Context, from, to int64) (int64, error) {
	if to < from {
		return 0, nil
	}
	latest, err := t.latestFor(ctx, to)
	if err != nil {
		return 0, err
	}
	l, err := t.fullListingTo(ctx, to)
	if err != nil {
		return 0, err
	}
	md := latest.Metadata()
	if err := t.readHeads(ctx, l, md, from, to, true); err != nil {
		return 0, err
	}
	if err := l.fillTimes(ctx, t.store); err != nil {
		return 0, t.wrap(-1, err)
	}
	var total int64
	var line []byte
	runFrom := int64(-1)
	flush := func(runTo int64) error {
		if runFrom < 0 {
			return nil
		}
		err := t.HistoryEach(ctx, runFrom, runTo, func(c CommitSummary) error {
			line = c.AppendLine(line[:0]) // one buffer for every line: nothing kept per version
			total += int64(len(line))
			return nil
		})
		runFrom = -1
		return err
	}
	for i := l.commits.search(from); i < l.commits.len() && l.commits.entries[i].version <= to; i++ {
		v := l.commits.entries[i].version
		n, ok := t.knownLine(v)
		if u, untimed := t.untimed.get(v); !ok && untimed && !ictApplies(md, v) {
			n, ok = u+int32(timeTextLen(l.commits.monotonicMs(i))), true
		}
		if !ok {
			if runFrom < 0 {
				runFrom = v
			}
			continue
		}
		if err := flush(v - 1); err != nil {
			return 0, err
		}
		total += int64(n)
	}
	return total, flush(to)
}

// latestFor returns the newest snapshot, refreshed when to is beyond it.
func (t *Table) latestFor(ctx context.Context, to int64) (*Snapshot, error) {
	if latest := t.Current(); latest != nil && to <= latest.version {
		return latest, nil
	}
	return t.Latest(ctx)
}

// readHeads reads, in parallel, the commitInfos of the commits from..to
// of listing l whose time is their file's (no in-commit timestamp) and
// whose untimed line length is not known, keeping that length and the
// commit's size and time (which a local store's read gives). With must,
// the first error is returned; without, errors are left for whoever
// reads those versions next.
func (t *Table) readHeads(ctx context.Context, l *logListing, md *Metadata, from, to int64, must bool) error {
	var idx []int
	for i := l.commits.search(from); i < l.commits.len() && l.commits.entries[i].version <= to; i++ {
		v := l.commits.entries[i].version
		if _, ok := t.untimed.get(v); !ok && !ictApplies(md, v) {
			idx = append(idx, i)
		}
	}
	err := parallel(ctx, len(idx), func(ctx context.Context, k int) error {
		i := idx[k]
		c, err := readCommitInfo(ctx, t.store, l.commits.file(i))
		if err != nil {
			if must {
				return err
			}
			return nil
		}
		if !c.file.ModTime.IsZero() {
			l.commits.setInfo(i, c.file.ObjectInfo)
		}
		s := summarize(c, 0, md)
		t.untimed.put(c.version, int32(len(s.AppendLine(nil))-timeTextLen(0)))
		return nil
	})
	if err != nil {
		return t.wrap(-1, err)
	}
	return nil
}

// timeTextLen is the length of the JSON text of the time ms (Unix ms, UTC)
// in a summary: time.Time's MarshalJSON, RFC 3339 with the fraction's
// trailing zeros dropped, in quotes.
func timeTextLen(ms int64) int {
	var b [40]byte
	return len(time.UnixMilli(ms).UTC().AppendFormat(b[:0], time.RFC3339Nano)) + 2
}
