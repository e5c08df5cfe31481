package delta

// Time travel: the version in force at a time (VersionAt) or the first at
// or after it (VersionAtOrAfter), by in-commit timestamps where the table
// has them [PROTOCOL.md "In-Commit Timestamps"], else by commit file times
// made monotonic.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	md := latest.Metadata()
	if md.InCommitTimestampsEnabled() {
		ev, ets, ok := md.ICTEnablement()
		if !ok {
			ev = 0
		}
		if !ok || ts.UnixMilli() >= ets {
			v, err := t.versionAtICT(ctx, latest, ev, ts)
			if !errors.Is(err, errNeedListing) {
				return v, err
			}
		}
	}
	return t.versionAtListed(ctx, md, ts)
}

// errNeedListing says a commit that the binary search probed is gone (a
// cleaned-up log): the listing decides instead.
var errNeedListing = errors.New("commit file missing, list the log")

// versionAtICT binary-searches the versions from ev (the first with an
// in-commit timestamp) to the latest for the last one whose timestamp is
// at or before ts, reading one commit file per probe and no listing:
// about 17 reads for 100,000 versions. In-commit timestamps strictly
// increase by the protocol, which makes the search exact.
func (t *Table) versionAtICT(ctx context.Context, latest *Snapshot, ev int64, ts time.Time) (int64, error) {
	target := ts.UnixMilli()
	timeOf := func(v int64) (int64, error) {
		f, known := t.knownCommit(latest, v)
		if !known { // not listed yet: probe the commit by its name
			f = LogFile{ObjectInfo: ObjectInfo{Key: canonicalCommitKey(v)}, Kind: KindCommit, Version: v}
		} else if f.Key == "" {
			return 0, errNeedListing // only a checkpoint is left of v
		}
		ms, err := t.ictOf(ctx, f)
		if errors.Is(err, ErrNotExist) {
			return 0, errNeedListing
		}
		return ms, err
	}
	lo, hi := ev, latest.version // invariant: the answer is in [lo-1, hi]
	first, err := timeOf(lo)
	if err != nil {
		return 0, err
	}
	if first > target {
		return 0, t.wrap(-1, fmt.Errorf("%w: %s is before the earliest available commit", ErrVersionNotFound, ts.UTC().Format(time.RFC3339Nano)))
	}
	for lo < hi { // timeOf(lo) <= target
		mid := lo + (hi-lo+1)/2
		ms, err := timeOf(mid)
		if err != nil {
			return 0, t.wrap(-1, err)
		}
		if ms <= target {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, nil
}

// knownCommit returns v's commit file when a segment or listing in memory
// has it; known is false when none covers v. f.Key is empty for a
// version known to have no commit file.
func (t *Table) knownCommit(latest *Snapshot, v int64) (f LogFile, known bool) {
	if f, ok := latest.segmentCommit(v); ok {
		return f, true
	}
	t.mu.Lock()
	full := t.full
	t.mu.Unlock()
	if full == nil || v > full.maxV {
		return LogFile{}, false
	}
	f, _ = full.commits.get(v)
	return f, true
}

// versionAtListed resolves ts from a listing of the whole log: monotonized
// file times before the in-commit timestamp enablement (or everywhere when
// in-commit timestamps are off), in-commit timestamps after it.
func (t *Table) versionAtListed(ctx context.Context, md *Metadata, ts time.Time) (int64, error) {
	l, err := t.fullListing(ctx)
	if err != nil {
		return 0, err
	}
	if err := l.fillTimes(ctx, t.store); err != nil {
		return 0, t.wrap(-1, err)
	}
	var cands []int64 // reconstructable versions with a commit file, ascending
	for _, v := range l.reconstructable() {
		if l.commits.has(v) {
			cands = append(cands, v)
		}
	}
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
			return l.commits.monotonicMs(l.commits.find(v))
		}
		f, _ := l.commits.get(v)
		ict, err := t.ictOf(ctx, f)
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

// commitICT reads the in-commit timestamp of a commit. The protocol puts
// the commitInfo first in a commit of a table with in-commit timestamps,
// so the first line is enough: it reads a prefix of the file (the whole
// file only when the first line is longer), and parses and caches nothing
// else.
func (t *Table) commitICT(ctx context.Context, f LogFile) (int64, error) {
	line, err := t.firstLine(ctx, f)
	if err != nil {
		return 0, fmt.Errorf("read commit %d (%s): %w", f.Version, f.Key, err)
	}
	var a struct {
		CommitInfo json.RawMessage `json:"commitInfo"`
	}
	if json.Unmarshal(line, &a) == nil && a.CommitInfo != nil {
		if ict, ok := inCommitTimestamp(a.CommitInfo); ok {
			t.noteLine(f, a.CommitInfo)
			return ict, nil
		}
	}
	return 0, corruptf("commit %d has no inCommitTimestamp in its first action although in-commit timestamps are enabled", f.Version)
}

// ictPrefix is how much of a commit is read for its first line.
const ictPrefix = 8 << 10

// firstLine returns the first line of a commit file.
func (t *Table) firstLine(ctx context.Context, f LogFile) ([]byte, error) {
	if c, ok := t.commits.Peek(commitKey{t, f.Version}); ok && c.file.Key == f.Key && len(c.actions) > 0 && c.actions[0].CommitInfo != nil {
		// Parsed already: its first action, as the file's first line.
		return json.Marshal(map[string]json.RawMessage{"commitInfo": c.actions[0].CommitInfo})
	}
	rc, err := t.store.ReadRange(ctx, f.Key, 0, ictPrefix)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return nil, err
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[:i], nil
	}
	if len(data) < ictPrefix {
		return data, nil // a one-line commit
	}
	data, err = readSized(ctx, t.store, f.Key, f.Size)
	if err != nil {
		return nil, err
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	}
	return data, nil
}

func versionsBelow(vs []int64, limit int64) []int64 {
	i := sort.Search(len(vs), func(i int) bool { return vs[i] >= limit })
	return vs[:i]
}

func versionsAtOrAbove(vs []int64, limit int64) []int64 {
	i := sort.Search(len(vs), func(i int) bool { return vs[i] >= limit })
	return vs[i:]
}

// VersionAtOrAfter returns the first version committed at or after ts, by
// VersionAt's rule: the start of a range of changes named by time (Spark's
// table_changes takes its starting timestamp so; VersionAt, the last version
// at or before a time, is its end). A time before the first reconstructable
// commit gives that commit's version; a time after the last commit gives
// the version after it, which does not exist yet (a range from it is
// empty).
func (t *Table) VersionAtOrAfter(ctx context.Context, ts time.Time) (int64, error) {
	v, err := t.VersionAt(ctx, ts)
	if err != nil {
		if !errors.Is(err, ErrVersionNotFound) || ts.After(time.Now()) {
			return 0, err
		}
		rs, rerr := t.VersionRanges(ctx)
		if rerr != nil || len(rs) == 0 {
			return 0, err
		}
		return rs[0].From, nil
	}
	info, err := t.Version(ctx, v)
	if err != nil {
		return 0, err
	}
	if info.ModTime.Equal(ts) {
		return v, nil
	}
	return v + 1, nil
}
