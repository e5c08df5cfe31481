package nodes

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// versionStream is the open handle of a table directory: @latest, one @vN
// per reconstructable version, _history.jsonl and inbox/. It holds the
// versions as ranges (a log without gaps is one) and makes each entry when
// it is read, so that listing 1,000,000 versions allocates no per-version
// state, and opening the directory does no work while the kernel's cached
// listing is still valid (FOPEN_CACHE_DIR: no READDIR reaches us then).
//
// READDIRPLUS: the @vN entries are returned without attributes (a zero
// node id, which the kernel takes as "no attributes for this entry"), so
// that a plain ls neither creates an inode per version nor reads a commit
// for its in-commit timestamp; ls -l then looks each name up (cheap, see
// TableDir.Lookup). The few other entries get their attributes.
type versionStream struct {
	dir    *TableDir
	loaded bool
	head   []fuse.DirEntry // entries before the versions
	tail   []fuse.DirEntry // entries after them
	ranges [][2]int64      // inclusive version ranges
	total  uint64          // number of entries
	pos    uint64          // index of the next entry
}

var (
	_ = (fs.FileReaddirenter)((*versionStream)(nil))
	_ = (fs.FileSeekdirer)((*versionStream)(nil))
	_ = (fs.FileLookuper)((*versionStream)(nil))
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
	s.head = []fuse.DirEntry{{Name: LatestName, Mode: syscall.S_IFLNK, Ino: stableIno(kindLatest, d.name, 0, "")}}
	s.tail = []fuse.DirEntry{{Name: HistoryName, Mode: syscall.S_IFREG, Ino: stableIno(kindHistory, d.name, 0, "")}}
	if d.inbox != nil {
		s.tail = append(s.tail, fuse.DirEntry{Name: InboxName, Mode: syscall.S_IFDIR, Ino: stableIno(kindInbox, d.name, 0, "/")})
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
			return fuse.DirEntry{Name: versionName(v), Mode: syscall.S_IFDIR, Ino: stableIno(kindSnapDir, s.dir.name, v, "")}
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

// Lookup answers READDIRPLUS: attributes for the fixed entries, none for
// @vN (see the type's comment) nor for _history.jsonl, whose size is that
// of every version's line (counted once: a plain ls does not pay for it).
func (s *versionStream) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if (len(name) > 2 && name[:2] == "@v") || name == HistoryName {
		return nil, syscall.ENOENT // no attributes: the kernel looks it up when asked
	}
	return s.dir.Lookup(ctx, name, out)
}
