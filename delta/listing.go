package delta

// A listing of _delta_log, classified: commits by version (a commitIndex),
// checkpoint files by version, how far it reaches. Made with the fewest
// requests the store allows (by name on a local store, ranges in parallel
// on one that lists ranges); the planner (planner.go) chooses segments
// from it.

import (
	"context"
	"errors"
	"path"
	"sort"
	"sync"
)

// logListing is a sorted, classified listing of _delta_log from some version
// on. Junk is dropped.
type logListing struct {
	from    int64
	commits *commitIndex
	checkpt map[int64][]LogFile // every checkpoint file, by version
	maxV    int64               // highest commit version listed, -1 if none
	vs      versionSpans        // reconstructable versions, computed on first use
	byName  bool                // listed by name: commit sizes and times unknown until filled

	fillMu sync.Mutex // serializes fillTimes
	filled bool       // guarded by fillMu: every commit's size and time known
}

// listLog lists _delta_log starting at version from. A store that lists
// names cheaply (NameLister) is listed by name, with no stat (see
// fillTimes).
func listLog(ctx context.Context, s Storage, from int64) (*logListing, error) {
	return listLogUpTo(ctx, s, from, -1)
}

// listWorkers is how many listing requests run at once: they wait on the
// network, not the CPU.
const listWorkers = 16

// listChunk is how many versions one request of a parallel listing covers:
// their commits and a few checkpoints fit one page of 1,000 keys.
const listChunk = 900

// listLogUpTo is listLog knowing that the log reaches about version upTo
// (-1: unknown): a store that lists ranges (RangeLister) is then listed
// in chunks of listChunk versions with parallel requests, the last chunk
// open-ended, so that the 110 pages of a 100,000-commit log on S3 take
// about seven round trips instead of 110.
func listLogUpTo(ctx context.Context, s Storage, from, upTo int64) (*logListing, error) {
	if l, ok, err := listLogByName(ctx, s, from); ok {
		return l, err
	}
	rl, ranged := s.(RangeLister)
	if !ranged || upTo-from < 2*listChunk {
		return listLogOnce(ctx, s, from)
	}
	var bounds []string // chunk k lists [bounds[k], bounds[k+1]); the last is open
	for v := from; v <= upTo; v += listChunk {
		b := ""
		if v > 0 {
			b = versionPrefix(v)
		}
		bounds = append(bounds, b)
	}
	parts := make([][]ObjectInfo, len(bounds))
	err := parallelN(ctx, len(bounds), listWorkers, func(ctx context.Context, k int) error {
		to := ""
		if k+1 < len(bounds) {
			to = bounds[k+1]
		}
		objs, err := rl.ListRange(ctx, LogDir, bounds[k], to)
		if errors.Is(err, ErrNotExist) {
			err = nil
		}
		parts[k] = objs
		return err
	})
	if err != nil {
		return nil, err
	}
	var objs []ObjectInfo
	for _, p := range parts {
		objs = append(objs, p...)
	}
	return listingOfObjects(from, objs), nil
}

// listLogByName lists _delta_log by name when the store does that cheaply
// (ok false otherwise).
func listLogByName(ctx context.Context, s Storage, from int64) (l *logListing, ok bool, err error) {
	nl, is := s.(NameLister)
	if !is {
		return nil, false, nil
	}
	names, ok, err := nl.ListNames(ctx, LogDir, versionPrefixFrom(from))
	if !ok {
		return nil, false, nil
	}
	if err != nil && !errors.Is(err, ErrNotExist) {
		return nil, true, err
	}
	return listingOfNames(from, names), true, nil
}

// versionPrefixFrom is the first name a listing from version from needs.
func versionPrefixFrom(from int64) string {
	if from > 0 {
		return versionPrefix(from)
	}
	return ""
}

// listLogOnce lists _delta_log from version from with one listing.
func listLogOnce(ctx context.Context, s Storage, from int64) (*logListing, error) {
	start := versionPrefixFrom(from)
	objs, err := s.List(ctx, LogDir, start)
	if err != nil && !errors.Is(err, ErrNotExist) { // a missing dir lists as empty, as on object stores
		return nil, err
	}
	return listingOfObjects(from, objs), nil
}

// listingOfObjects classifies a sorted listing of _delta_log.
func listingOfObjects(from int64, objs []ObjectInfo) *logListing {
	l := &logListing{from: from, commits: &commitIndex{}, checkpt: map[int64][]LogFile{}, maxV: -1}
	for _, o := range objs {
		f, ok := ParseLogName(path.Base(o.Key))
		if !ok || f.Version < from {
			continue
		}
		f.ObjectInfo = o
		switch f.Kind {
		case KindCommit:
			l.commits.add(f)
			l.maxV = max(l.maxV, f.Version)
		case KindCheckpoint, KindMultiPartCheckpt, KindUUIDCheckpoint:
			l.checkpt[f.Version] = append(l.checkpt[f.Version], f)
		}
	}
	l.commits.finish()
	return l
}

// listingOfNames classifies a name listing. Nothing is stat-ed: sizes and
// times are learnt when needed (fillTime, fillTimes, statOwnCommit), and a
// checkpoint of unknown size is read whole, as it is anyway.
func listingOfNames(from int64, names []string) *logListing {
	objs := make([]ObjectInfo, len(names))
	for i, n := range names {
		objs[i].Key = LogDir + n
	}
	l := listingOfObjects(from, objs)
	l.byName = true
	return l
}

// fillTime makes sure commit entry i's size and time are known, stat-ing
// the commit of a listing made by name.
func (l *logListing) fillTime(ctx context.Context, s Storage, i int) (LogFile, error) {
	f := l.commits.file(i)
	if !l.byName || !f.ModTime.IsZero() {
		return f, nil
	}
	o, err := s.Stat(ctx, f.Key)
	if err != nil {
		return f, err
	}
	l.commits.setInfo(i, o)
	return l.commits.file(i), nil
}

// fillTimes makes sure every commit's size and time are known, with
// concurrent stats (local stores, the only ones listed by name, answer
// them from the inode cache or the disk).
func (l *logListing) fillTimes(ctx context.Context, s Storage) error {
	if !l.byName {
		return nil
	}
	l.fillMu.Lock()
	defer l.fillMu.Unlock()
	if l.filled {
		return nil
	}
	var todo []LogFile
	var idx []int
	l.commits.versions(func(i int, v int64) {
		if f := l.commits.file(i); f.ModTime.IsZero() {
			todo, idx = append(todo, f), append(idx, i)
		}
	})
	infos := make([]ObjectInfo, len(todo))
	err := parallel(ctx, len(todo), func(ctx context.Context, k int) error {
		var err error
		infos[k], err = s.Stat(ctx, todo[k].Key)
		return err
	})
	if err != nil {
		return err
	}
	for k, i := range idx {
		l.commits.setInfo(i, infos[k])
	}
	l.filled = true
	return nil
}

// latestVersion is the newest version the listing can describe: the highest
// commit, or a checkpoint beyond it (a log whose commits were cleaned up).
func (l *logListing) latestVersion() int64 {
	v := l.maxV
	for cv := range l.checkpt {
		if cv > v && len(l.completeCheckpoint(cv)) > 0 {
			v = cv
		}
	}
	return v
}

// completeCheckpoint returns the files of a usable checkpoint at version v,
// or nil. Preference follows Delta Kernel: UUID-named (V2) over multi-part
// over classic; a multi-part checkpoint counts only with all its parts.
func (l *logListing) completeCheckpoint(v int64) []LogFile {
	files := l.checkpt[v]
	var uuids, classic []LogFile
	parts := map[int]map[int]LogFile{} // parts count -> part -> file
	for _, f := range files {
		switch f.Kind {
		case KindUUIDCheckpoint:
			uuids = append(uuids, f)
		case KindCheckpoint:
			classic = append(classic, f)
		case KindMultiPartCheckpt:
			if parts[f.Parts] == nil {
				parts[f.Parts] = map[int]LogFile{}
			}
			parts[f.Parts][f.Part] = f
		}
	}
	if len(uuids) > 0 {
		sort.Slice(uuids, func(i, j int) bool { return uuids[i].Key < uuids[j].Key })
		return uuids[len(uuids)-1:]
	}
	counts := make([]int, 0, len(parts))
	for n := range parts {
		counts = append(counts, n)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(counts)))
	for _, n := range counts {
		if len(parts[n]) == n {
			out := make([]LogFile, 0, n)
			for i := 1; i <= n; i++ {
				out = append(out, parts[n][i])
			}
			return out
		}
	}
	return classic
}
