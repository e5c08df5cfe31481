package nodes

import (
	"context"
	"strconv"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/delta"
)

// versionStream is the open handle of a table directory: @latest, one @vN
// per reconstructable version, _history.jsonl and inbox/. It holds the
// versions as ranges (a log without gaps is one) and makes each entry when
// it is read, so that listing 1,000,000 versions allocates no per-version
// state, and opening the directory does no work while the kernel's cached
// listing is still valid (FOPEN_CACHE_DIR: no READDIR reaches us then).
//
// READDIRPLUS: each @vN entry carries its attributes when its commit time
// can be had cheaply (Table.VersionsIn, a batch of versions at a time: a
// local table's in-commit timestamps read a round at a time in parallel;
// a remote table's times only when its listing gave them or they were
// read before), so that `ls -l` of a long history costs a READDIRPLUS per
// few hundred versions instead of a LOOKUP per version. The mount asks the
// kernel for READDIRPLUS_AUTO: READDIRPLUS for a directory's first chunk,
// then for the next only when the entries of the last were used (ls -l
// stats each chunk as it reads it), plain READDIR otherwise; so a plain
// ls of a long history reads the times of its first chunk only, and makes
// no inode beyond it. Each entry given attributes is an inode the kernel
// holds until it forgets it (a SnapshotDir that holds no snapshot: about
// 0.9 KiB of the mount's memory, measured), as a LOOKUP of it would be.
// _history.jsonl goes without attributes, since its size reads every
// commit and a plain ls should not pay for it.
type versionStream struct {
	dir    *TableDir
	loaded bool
	head   []fuse.DirEntry // entries before the versions
	tail   []fuse.DirEntry // entries after them
	ranges [][2]int64      // inclusive version ranges
	total  uint64          // number of entries
	pos    uint64          // index of the next entry
	batch  versionBatch    // attributes of the versions being listed
	ahead  readAhead       // the next batch, read while the kernel takes this one
}

// readAhead is the batch of versions after the one being listed, read in
// the background (Table.VersionsIn, its answers dropped: what it learns,
// commit times and history line lengths, the table keeps) while the kernel
// takes the current batch's entries, so that ls -l of a long history
// waits for the first batch's reads only. It runs on a context the stream
// owns, cancelled and waited for in Releasedir.
type readAhead struct {
	from   int64
	done   chan struct{} // closed when the read of from.. ends; nil: none running
	ctx    context.Context
	cancel context.CancelFunc
}

// versionBatch is what Table.VersionsIn said of the versions from..from+len-1.
type versionBatch struct {
	from  int64
	infos []delta.VersionInfo
	errs  []error
}

// plusBatch is how many versions' attributes one batch reads: a few
// READDIRPLUS replies' worth, so that a listing stopped early (ls | head)
// reads little more than it shows.
const plusBatch = 256

var (
	_ = (fs.FileReaddirenter)((*versionStream)(nil))
	_ = (fs.FileSeekdirer)((*versionStream)(nil))
	_ = (fs.FileLookuper)((*versionStream)(nil))
	_ = (fs.FileReleasedirer)((*versionStream)(nil))
)

func (s *versionStream) load(ctx context.Context) syscall.Errno {
	if s.loaded {
		return 0
	}
	d := s.dir
	rs, err := d.table.VersionRanges(ctx)
	if err != nil {
		return d.env.metaErrno("list versions", err, "table", d.name)
	}
	s.head = []fuse.DirEntry{{Name: LatestName, Mode: syscall.S_IFLNK, Ino: StableIno(kindLatest, d.name, 0, "")}}
	s.tail = []fuse.DirEntry{{Name: HistoryName, Mode: syscall.S_IFREG, Ino: StableIno(kindHistory, d.name, 0, "")}}
	if d.inbox != nil {
		s.tail = append(s.tail, fuse.DirEntry{Name: InboxName, Mode: syscall.S_IFDIR, Ino: StableIno(KindInbox, d.name, 0, "/")})
	}
	s.total = uint64(len(s.head) + len(s.tail))
	for _, r := range rs {
		s.ranges = append(s.ranges, [2]int64{r.From, r.To})
		s.total += uint64(r.To - r.From + 1)
	}
	s.loaded = true
	return 0
}

// entry returns entry i (i < total).
func (s *versionStream) entry(i uint64) fuse.DirEntry {
	if i < uint64(len(s.head)) {
		return s.head[i]
	}
	i -= uint64(len(s.head))
	for _, r := range s.ranges {
		n := uint64(r[1] - r[0] + 1)
		if i < n {
			v := r[0] + int64(i)
			return fuse.DirEntry{Name: versionName(v), Mode: syscall.S_IFDIR, Ino: StableIno(kindSnapDir, s.dir.name, v, "")}
		}
		i -= n
	}
	return s.tail[i]
}

// Readdirent returns the next entry; offsets are entry index + 1.
func (s *versionStream) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if errno := s.load(ctx); errno != 0 {
		return nil, errno
	}
	if s.pos >= s.total {
		return nil, 0
	}
	e := s.entry(s.pos)
	s.pos++
	e.Off = s.pos
	return &e, 0
}

// Seekdir moves to the entry after offset off.
func (s *versionStream) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	s.pos = off
	return 0
}

// Lookup answers READDIRPLUS: attributes for every entry but
// _history.jsonl, whose size is that of every version's line (counted
// once, when asked: a plain ls does not pay for it). An @vN whose
// attributes cannot be had goes without, and a LOOKUP reports why.
func (s *versionStream) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if name == HistoryName {
		return nil, syscall.ENOENT // no attributes: the kernel looks it up when asked
	}
	if len(name) <= 2 || name[:2] != "@v" {
		return s.dir.Lookup(ctx, name, out)
	}
	v, err := strconv.ParseInt(name[2:], 10, 64)
	if err != nil {
		return nil, syscall.ENOENT
	}
	info, ok := s.versionInfo(ctx, v)
	if !ok {
		return nil, syscall.ENOENT
	}
	return s.dir.snapshotChild(ctx, info, out), 0
}

// versionInfo returns version v's attributes from the current batch,
// reading the batch that starts at v (to the end of v's range) when v is
// not in it.
func (s *versionStream) versionInfo(ctx context.Context, v int64) (delta.VersionInfo, bool) {
	b := &s.batch
	if v < b.from || v >= b.from+int64(len(b.infos)) {
		to, ok := s.rangeEnd(v)
		if !ok {
			return delta.VersionInfo{}, false
		}
		s.waitAhead(ctx, v)
		infos, errs, err := s.dir.table.VersionsIn(ctx, v, min(to, v+plusBatch-1))
		if err != nil {
			return delta.VersionInfo{}, false
		}
		*b = versionBatch{from: v, infos: infos, errs: errs}
		if v != s.ranges[0][0] { // attributes wanted past the first batch: ls -l
			s.startAhead(v+plusBatch, to)
		}
	}
	i := v - b.from
	return b.infos[i], b.errs[i] == nil
}

// rangeEnd returns the last version of the listed range that holds v.
func (s *versionStream) rangeEnd(v int64) (int64, bool) {
	for _, r := range s.ranges {
		if v >= r[0] && v <= r[1] {
			return r[1], true
		}
	}
	return 0, false
}

// startAhead reads the batch from..min(to, from+plusBatch-1) in the
// background, unless a read ahead is still running.
func (s *versionStream) startAhead(from, to int64) {
	a := &s.ahead
	if from > to || a.done != nil {
		return
	}
	if a.ctx == nil {
		a.ctx, a.cancel = context.WithCancel(context.Background())
	}
	done := make(chan struct{})
	a.from, a.done = from, done
	go func(ctx context.Context) {
		defer close(done)
		_, _, _ = s.dir.table.VersionsIn(ctx, from, min(to, from+plusBatch-1))
	}(a.ctx)
}

// waitAhead waits for the read ahead when it covers v, so that the
// batch's own read finds what it learnt instead of reading it again.
func (s *versionStream) waitAhead(ctx context.Context, v int64) {
	a := &s.ahead
	if a.done == nil {
		return
	}
	if v >= a.from && v < a.from+plusBatch {
		select {
		case <-a.done:
		case <-ctx.Done():
			return
		}
	}
	select {
	case <-a.done:
		a.done = nil
	default:
	}
}

// Releasedir stops a read ahead still running and waits for it.
func (s *versionStream) Releasedir(ctx context.Context, releaseFlags uint32) {
	if a := &s.ahead; a.cancel != nil {
		a.cancel()
		if a.done != nil {
			<-a.done
		}
	}
}
