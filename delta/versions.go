package delta

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"
)

// VersionInfo describes one reconstructable version of a table.
type VersionInfo struct {
	Version int64
	// ModTime is the modification time of the commit file (zero when only
	// a checkpoint is left of that version).
	ModTime time.Time
}

// span is an inclusive range of versions.
type span struct{ from, to int64 }

// versionSpans holds the reconstructable versions of a listing as ranges:
// a version is reconstructable when it has a complete checkpoint, or its
// commit and a reconstructable predecessor, or it is version 0 with a
// commit. Computed once per listing (listings are immutable once made).
type versionSpans struct {
	once  sync.Once
	spans []span
}

func (l *logListing) spans() []span {
	l.vs.once.Do(func() {
		latest := l.latestVersion()
		var out []span
		ok := false
		for v := int64(0); v <= latest; v++ {
			hasCommit := l.commits.has(v)
			switch {
			case l.checkpt[v] != nil && len(l.completeCheckpoint(v)) > 0:
				ok = true
			case v == 0:
				ok = hasCommit
			default:
				ok = ok && hasCommit
			}
			if !ok {
				continue
			}
			if n := len(out); n > 0 && out[n-1].to == v-1 {
				out[n-1].to = v
			} else {
				out = append(out, span{v, v})
			}
		}
		l.vs.spans = out
	})
	return l.vs.spans
}

// reconstructable returns the versions of the listing that have a complete
// checkpoint at or before them (within the listing) with contiguous commits
// after it, or contiguous commits from 0. Valid only for a listing from 0.
func (l *logListing) reconstructable() []int64 {
	var out []int64
	for _, s := range l.spans() {
		for v := s.from; v <= s.to; v++ {
			out = append(out, v)
		}
	}
	return out
}

// isReconstructable reports whether v is in the listing's spans.
func (l *logListing) isReconstructable(v int64) bool {
	sp := l.spans()
	i := sort.Search(len(sp), func(i int) bool { return sp[i].to >= v })
	return i < len(sp) && sp[i].from <= v
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
	if err := l.fillTimes(ctx, t.store); err != nil {
		return nil, t.wrap(-1, err)
	}
	var out []VersionInfo
	for _, s := range l.spans() {
		for v := s.from; v <= s.to; v++ {
			f, _ := l.commits.get(v)
			out = append(out, VersionInfo{Version: v, ModTime: f.ModTime})
		}
	}
	return out, nil
}

// VersionRange is an inclusive range of reconstructable versions.
type VersionRange struct{ From, To int64 }

// VersionRanges returns the reconstructable versions as ascending ranges
// (a log without gaps is one range): 16 bytes however many versions. The
// whole log is listed once; after that only when the newest version known
// (from Latest, which the mount's refresh calls) is beyond the listing, so
// listing a table's versions again costs no storage request until a new
// commit lands.
func (t *Table) VersionRanges(ctx context.Context) ([]VersionRange, error) {
	t.mu.Lock()
	full, latest := t.full, t.latest
	t.mu.Unlock()
	if full == nil || latest == nil || latest.version > full.latestVersion() {
		var err error
		if full, err = t.fullListing(ctx); err != nil {
			return nil, err
		}
	}
	sp := full.spans()
	out := make([]VersionRange, len(sp))
	for i, s := range sp {
		out[i] = VersionRange{s.from, s.to}
	}
	return out, nil
}

// Version describes version v without building its snapshot: whether it is
// reconstructable (an error wrapping ErrVersionNotFound when not) and its
// commit time, by the rule History and VersionAt use (the in-commit
// timestamp where the newest metadata enables it for v, else the commit
// file's modification time, not monotonized). It reads no storage for a
// version in the newest snapshot's segment or in a listing already made,
// and at most the version's commit file (once; the time is kept) for the
// in-commit timestamp.
//
// A newest version that cannot be read (a corrupt last commit) does not
// hide the versions before it: they are then found in the listing, with
// file times.
func (t *Table) Version(ctx context.Context, v int64) (VersionInfo, error) {
	return t.version(ctx, v, true)
}

// ErrTimeNotRead is VersionsIn's answer for a version of a remote table
// whose time is not known without a request (its in-commit timestamp not
// read yet): Version reads it.
var ErrTimeNotRead = errors.New("commit time not read yet")

// version is Version; with read false, a time that would take a read of
// the log (a commit's in-commit timestamp, a stat of its file) is
// answered with ErrTimeNotRead instead.
func (t *Table) version(ctx context.Context, v int64, read bool) (VersionInfo, error) {
	t.mu.Lock()
	latest := t.latest
	t.mu.Unlock()
	var err error
	if latest == nil || v > latest.version { // else: no LIST per lookup
		latest, err = t.Latest(ctx)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return VersionInfo{}, err
		}
		latest = nil
	}
	f, ok, err := t.commitOf(ctx, latest, v)
	if err != nil {
		return VersionInfo{}, err
	}
	if !ok {
		nf := &VersionNotFoundError{Version: v, Latest: -1}
		if latest != nil {
			nf.Latest = latest.version
		}
		return VersionInfo{}, t.wrap(v, nf)
	}
	if f.Key != "" && latest != nil && ictApplies(latest.Metadata(), v) {
		if !t.ictKnown(v) {
			if !read {
				return VersionInfo{}, ErrTimeNotRead
			}
			t.readAheadICTs(ctx, latest, v)
		}
		ms, err := t.ictOf(ctx, f)
		if err != nil {
			return VersionInfo{}, t.wrap(v, err)
		}
		return VersionInfo{Version: v, ModTime: time.UnixMilli(ms).UTC()}, nil
	}
	if f.Key != "" && f.ModTime.IsZero() { // listed by name: stat it now
		if !read {
			return VersionInfo{}, ErrTimeNotRead
		}
		o, err := t.store.Stat(ctx, f.Key)
		if err != nil && !errors.Is(err, ErrNotExist) {
			return VersionInfo{}, t.wrap(v, err)
		}
		f.ModTime = o.ModTime
	}
	return VersionInfo{Version: v, ModTime: f.ModTime}, nil
}

// ictReadAhead is how many versions' in-commit timestamps a local table
// reads at once, in parallel, from the first one asked for that is not
// known: `ls -l` of a table directory looks its @vN up in order, so one
// round of reads answers the next lookups from memory.
const ictReadAhead = 256

// readAheadICTs reads the unknown in-commit timestamps of versions
// v+1..v+ictReadAhead-1 of a local table (errors are left for the
// lookups of those versions to meet). A remote table reads only what is
// asked for: a GET each.
func (t *Table) readAheadICTs(ctx context.Context, latest *Snapshot, v int64) {
	if LocalDir(t.store) == "" {
		return
	}
	var files []LogFile
	md := latest.Metadata()
	for w := v + 1; w < v+ictReadAhead && w <= latest.version; w++ {
		f, ok, err := t.commitOf(ctx, latest, w)
		if err != nil || !ok || f.Key == "" || !ictApplies(md, w) || t.ictKnown(w) {
			continue
		}
		files = append(files, f)
	}
	_ = parallel(ctx, len(files), func(ctx context.Context, i int) error {
		_, _ = t.ictOf(ctx, files[i])
		return nil
	})
}

// VersionsIn describes versions from..to as Version does, one answer per
// version: infos[i] and errs[i] are the answer for from+i. A local table's
// times are read as Version reads them (in-commit timestamps a round of
// ictReadAhead at a time, in parallel); a remote table's are only those
// known without a request (its listing's file times, timestamps read
// before), the others ErrTimeNotRead: a listing of a long history must
// not cost a GET per version. Only a cancelled ctx fails the whole call.
func (t *Table) VersionsIn(ctx context.Context, from, to int64) (infos []VersionInfo, errs []error, err error) {
	if to < from {
		return nil, nil, nil
	}
	n := int(to - from + 1)
	infos, errs = make([]VersionInfo, n), make([]error, n)
	read := LocalDir(t.store) != ""
	if read {
		t.fillTimesIn(ctx, from, to)
	}
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		infos[i], errs[i] = t.version(ctx, from+int64(i), read)
	}
	return infos, errs, nil
}

// fillTimesIn reads the commitInfos of the commits from..to of a local
// log listed by name (Table.readHeads), when their times are their files'
// (no in-commit timestamps): the read gives each commit's time, as a stat
// would, and its history line's length, kept (4 bytes a version) so that
// a stat of _history.jsonl after `ls -l` of the table reads nothing again.
// A batch is read in parallel; errors are left for Version to meet.
func (t *Table) fillTimesIn(ctx context.Context, from, to int64) {
	t.mu.Lock()
	latest := t.latest
	t.mu.Unlock()
	if latest == nil {
		return
	}
	full, err := t.fullListingTo(ctx, to) // as Version would list it
	if err != nil || !full.byName {
		return
	}
	_ = t.readHeads(ctx, full, latest.Metadata(), from, to, false)
}

// commitOf finds whether v is reconstructable and its commit file (a zero
// LogFile when only a checkpoint is left of it).
func (t *Table) commitOf(ctx context.Context, latest *Snapshot, v int64) (LogFile, bool, error) {
	if v < 0 || latest != nil && v > latest.version {
		return LogFile{}, false, nil
	}
	t.mu.Lock()
	full := t.full
	t.mu.Unlock()
	if latest != nil {
		if f, ok := latest.segmentCommit(v); ok {
			if f.ModTime.IsZero() && full != nil { // a segment listed by name: the whole listing may know the time
				if g, ok := full.commits.get(v); ok && g.Key == f.Key && !g.ModTime.IsZero() {
					f = g
				}
			}
			return f, true, nil
		}
	}
	// latestVersion looks at every checkpoint: maxV, a lower bound of it,
	// settles most calls (a listing of the history asks once per version).
	if full == nil || v > full.maxV && v > full.latestVersion() {
		var err error
		if full, err = t.fullListing(ctx); err != nil {
			return LogFile{}, false, err
		}
	}
	if !full.isReconstructable(v) {
		return LogFile{}, false, nil
	}
	f, _ := full.commits.get(v)
	return f, true, nil
}

// segmentCommit returns v's commit file when v is in the snapshot's
// segment (a zero LogFile for a checkpoint version without commit file).
func (s *Snapshot) segmentCommit(v int64) (LogFile, bool) {
	seg := s.segment
	if seg == nil || v < max(seg.CheckpointVersion, 0) || v > seg.Version {
		return LogFile{}, false
	}
	if v == seg.CheckpointVersion {
		return seg.CheckpointCommit, true
	}
	if i := v - seg.CheckpointVersion - 1; i >= 0 && i < int64(len(seg.Commits)) && seg.Commits[i].Version == v {
		return seg.Commits[i], true
	}
	return LogFile{}, false
}

// ictKnown reports whether version v's in-commit timestamp is in memory:
// read before, or in a parsed commit.
func (t *Table) ictKnown(v int64) bool {
	if _, ok := t.icts.get(v); ok {
		return true
	}
	// A commit parsed already (a snapshot's segment) has it in memory.
	c, ok := t.commits.Peek(commitKey{t, v})
	return ok && len(c.actions) > 0 && c.actions[0].CommitInfo != nil
}

// ictOf returns the in-commit timestamp of a commit, read once.
func (t *Table) ictOf(ctx context.Context, f LogFile) (int64, error) {
	if ms, ok := t.icts.get(f.Version); ok {
		return ms, nil
	}
	ms, err := t.commitICT(ctx, f)
	if err != nil {
		return 0, err
	}
	t.icts.put(f.Version, ms)
	return ms, nil
}

// fullListing returns a listing of the whole log, refreshed: the part
// after the newest known commit is listed again and merged.
func (t *Table) fullListing(ctx context.Context) (*logListing, error) {
	return t.fullListingTo(ctx, -1)
}

// fullListingTo is fullListing for a caller that needs only the commits up
// to version to (>= 0): a remembered listing that reaches it is returned
// without listing again.
func (t *Table) fullListingTo(ctx context.Context, to int64) (*logListing, error) {
	t.mu.Lock()
	prev := t.full
	if prev != nil && to >= 0 && prev.maxV >= to {
		t.mu.Unlock()
		return prev, nil
	}
	upTo := int64(-1) // where the log ends, as far as known: a hint for parallel listing
	if t.latest != nil {
		upTo = t.latest.version
	}
	t.mu.Unlock()
	if prev == nil {
		l, err := listLogUpTo(ctx, t.store, 0, upTo)
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
	merged := &logListing{from: 0, commits: prev.commits.merged(tail.commits), checkpt: map[int64][]LogFile{}, maxV: max(prev.maxV, tail.maxV),
		byName: prev.byName || tail.byName}
	for v, f := range prev.checkpt {
		merged.checkpt[v] = f
	}
	for v, f := range tail.checkpt {
		merged.checkpt[v] = f
	}
	t.mu.Lock()
	if t.full == nil || merged.maxV >= t.full.maxV {
		t.full = merged
	}
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
