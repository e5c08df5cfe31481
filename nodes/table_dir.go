package nodes

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/delta"
)

// Names in a table directory.
const (
	// LatestName is the symlink to the newest version's directory.
	LatestName = "@latest"
	// HistoryName is the file with one JSON object per commit.
	HistoryName = "_history.jsonl"
	// ReasonName is the file that says why a table cannot be read; it
	// exists only in the directory of such a table.
	ReasonName = "_deltafs_error.txt"
)

// TableDir is MOUNTPOINT/<table>. It lists @latest, one @vN per
// reconstructable version, _history.jsonl and, when SetInbox was
// called (a writable mount), inbox/ (package inbox); @<timestamp> names resolve
// on lookup only. A table whose latest version cannot be read (unknown
// reader feature, corrupt log) is "refused": its directory holds only
// _deltafs_error.txt, and its @ names fail with EOPNOTSUPP (unsupported
// feature) or EIO.
//
// What it knows of the table's newest version changes only in Refresh,
// which the mount's refresh loop calls; Invalidate then tells the kernel.
type TableDir struct {
	fs.Inode
	readOnlyDir

	env   *Env
	name  string
	table Table
	files Files

	inbox Inbox       // set by SetInbox before mounting; nil: no inbox/
	errs  dataErrors  // data files of its snapshots that failed to serve
	hist  historySize // the size of _history.jsonl, cached
	perms mirror      // the source's owners and modes, when mirrored (MirrorPerms)

	mu      sync.Mutex
	latest  *delta.Snapshot // guarded by mu: newest snapshot seen, nil until read
	refused error           // guarded by mu: why the table cannot be read (latest == nil)
	// stale is why the last refresh failed after the table had been read
	// (storage trouble, the table vanished or was replaced): @latest
	// stays at latest, and the status file says why it may be stale.
	stale error // guarded by mu
}

var (
	_ = (fs.NodeGetattrer)((*TableDir)(nil))
	_ = (fs.NodeLookuper)((*TableDir)(nil))
	_ = (fs.NodeOpendirHandler)((*TableDir)(nil))
)

// NewTableDir returns the directory of table, shown as name, whose data
// files are served by files.
func NewTableDir(env *Env, name string, table Table, files Files) *TableDir {
	d := &TableDir{env: env, name: name, table: table, files: files, hist: newHistorySize()}
	d.ro = roNode{env, &d.Inode}
	return d
}

// SetInbox gives the directory an inbox/ entry served by in (package
// inbox). Call it before the mount serves requests.
func (d *TableDir) SetInbox(in Inbox) { d.inbox = in }

// Env returns the Env the directory was built with.
func (d *TableDir) Env() *Env { return d.env }

// Name returns the table's name in the mount.
func (d *TableDir) Name() string { return d.name }

// Ino returns the directory's stable inode number.
func (d *TableDir) Ino() uint64 { return StableIno(kindTable, d.name, 0, "") }

// Refresh asks the table for its newest version. It reports whether what
// the directory shows changed (a new version, or the table became
// refused or readable). A failure after a success keeps the last good
// version (storage may be briefly unreachable) and is returned; a failure
// before any success refuses the table, with the error as the reason, and
// so does a log that cannot be read for what it holds (a corrupt or
// hostile commit or checkpoint, an unsupported feature) whenever it
// appears: the same rule at mount time and later. Only this
// table is refused; its older @vN stay readable where they do not
// depend on the damage.
func (d *TableDir) Refresh(ctx context.Context) (changed bool, err error) {
	d.perms.refresh()
	snap, err := d.table.Latest(ctx)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		if Cancelled(err) {
			return false, err
		}
		if d.latest != nil && !poisoned(err) {
			d.stale = err
			return false, err
		}
		changed = d.latest != nil || d.refused == nil || d.refused.Error() != err.Error()
		d.latest, d.refused, d.stale = nil, err, nil
		return changed, err
	}
	if d.latest != nil && snap.Version() < d.latest.Version() {
		// An overlapping Refresh (an inbox commit's) already saw a newer
		// version: @latest never moves back.
		return false, nil
	}
	changed = d.latest == nil || d.latest.Version() != snap.Version()
	d.latest, d.refused, d.stale = snap, nil, nil
	if changed && d.files != nil {
		d.files.Prepare(snap)
	}
	return changed, nil
}

// poisoned reports whether err says the log itself cannot be read, as
// opposed to storage failing to answer.
func poisoned(err error) bool {
	return errors.Is(err, delta.ErrCorruptLog) || errors.Is(err, delta.ErrUnsupportedFeature)
}

// Err returns why the table is refused, or nil.
func (d *TableDir) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.refused
}

// Invalidate tells the kernel that @latest and the listing may have
// changed. Call it only while mounted, outside any FUSE request.
func (d *TableDir) Invalidate() {
	d.NotifyEntry(LatestName)
	if l := d.GetChild(LatestName); l != nil {
		l.NotifyContent(0, 0)
	}
	d.NotifyContent(0, 0)
}

// current returns the newest snapshot known, reading it on first use.
func (d *TableDir) current(ctx context.Context) (*delta.Snapshot, error) {
	d.mu.Lock()
	snap, refused := d.latest, d.refused
	d.mu.Unlock()
	if snap != nil || refused != nil {
		return snap, refused
	}
	if _, err := d.Refresh(ctx); err != nil {
		return nil, err
	}
	return d.current(ctx)
}

// Getattr reports a directory stamped with the newest commit time.
func (d *TableDir) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	snap, _ := d.current(ctx)
	acc := d.access()
	FillAttr(&out.Attr, d.Ino(), acc.Dir(), acc.Owner, 0, snapTime(snap))
	out.SetTimeout(d.env.Opts.ShortTimeout)
	return 0
}

// snapTime is the commit time of s, zero for nil.
func snapTime(s *delta.Snapshot) time.Time {
	if s == nil {
		return time.Time{}
	}
	return s.Timestamp()
}

// Lookup resolves @latest, @vN, @<timestamp>, _history.jsonl, inbox and,
// for a refused table, _deltafs_error.txt.
func (d *TableDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	latest, err := d.current(ctx)
	if err != nil && latest == nil {
		if name == ReasonName {
			return d.reasonChild(ctx, out)
		}
		if Cancelled(err) {
			return nil, syscall.EINTR
		}
		if olderStillReadable(name, err) {
			return d.specChild(ctx, name, out)
		}
		if strings.HasPrefix(name, "@") || name == HistoryName {
			return nil, refusedErrno(err)
		}
		return nil, syscall.ENOENT
	}
	switch {
	case name == LatestName:
		return d.latestChild(ctx, latest, out)
	case name == HistoryName:
		return d.historyChild(ctx, out)
	case name == InboxName && d.inbox != nil:
		return d.inbox.Node(ctx, out), 0
	case name == ChangesName && d.files != nil:
		return d.changesChild(ctx, out), 0
	case strings.HasPrefix(name, "@"):
		return d.specChild(ctx, name, out)
	}
	return nil, syscall.ENOENT
}

// olderStillReadable reports whether name is an explicit @vN that is
// worth reading although the newest version failed with err: a corrupt or
// unreachable newest commit does not hide the versions before it (each
// fails by itself if it depends on the damage). A table refused for an
// unsupported feature stays refused whole.
func olderStillReadable(name string, err error) bool {
	if !strings.HasPrefix(name, "@v") || errors.Is(err, delta.ErrUnsupportedFeature) {
		return false
	}
	spec, perr := delta.ParseSpec(name[1:])
	return perr == nil && !spec.Latest && !spec.IsTime
}

// specChild resolves @vN to its snapshot directory and @<timestamp> to a
// symlink to the @vK it falls in.
func (d *TableDir) specChild(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	spec, err := delta.ParseSpec(name[1:])
	if err != nil || spec.Latest {
		return nil, syscall.ENOENT
	}
	if spec.IsTime {
		v, err := d.table.VersionAt(ctx, spec.Time)
		if err != nil {
			return nil, d.env.metaErrno("resolve timestamp", err, "table", d.name, "spec", name)
		}
		return d.timeChild(ctx, name, v, out)
	}
	info, err := d.table.Version(ctx, spec.Version)
	if err != nil {
		return nil, d.env.metaErrno("read version", err, "table", d.name, "version", spec.Version)
	}
	return d.snapshotChild(ctx, info, out), 0
}

// snapshotChild returns the @vN directory of a version. It builds nothing:
// the snapshot is read when something inside the directory is asked for.
func (d *TableDir) snapshotChild(ctx context.Context, info delta.VersionInfo, out *fuse.EntryOut) *fs.Inode {
	if ch := d.GetChild(versionName(info.Version)); ch != nil {
		if sd, ok := ch.Operations().(*SnapshotDir); ok {
			sd.fill(&out.Attr)
			out.SetEntryTimeout(d.env.Opts.LongTimeout)
			out.SetAttrTimeout(d.env.Opts.LongTimeout)
			return ch
		}
	}
	ref := &snapRef{env: d.env, table: d.table, files: d.files, name: d.name, version: info.Version, mtime: info.ModTime, errs: &d.errs, dir: d}
	sd := &SnapshotDir{ref: ref}
	sd.ro = roNode{d.env, &sd.Inode}
	sd.fill(&out.Attr)
	out.SetEntryTimeout(d.env.Opts.LongTimeout)
	out.SetAttrTimeout(d.env.Opts.LongTimeout)
	return d.NewInode(ctx, sd, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: sd.ino()})
}

// OpendirHandle lists @latest, @v0..@vN, _history.jsonl and inbox/ (or
// only the reason file of a refused table) through a versionStream. The
// kernel may cache the listing until Invalidate.
func (d *TableDir) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	latest, err := d.current(ctx)
	if err != nil && latest == nil {
		if Cancelled(err) {
			return nil, 0, syscall.EINTR
		}
		list := []fuse.DirEntry{{Name: ReasonName, Mode: syscall.S_IFREG, Ino: StableIno(kindReason, d.name, 0, "")}}
		return fs.NewListDirStream(list), 0, 0
	}
	return &versionStream{dir: d}, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// versionName is the directory name of a version: "@v" + N.
func versionName(v int64) string { return "@v" + strconv.FormatInt(v, 10) }

// latestChild returns the @latest symlink.
func (d *TableDir) latestChild(ctx context.Context, latest *delta.Snapshot, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	l := &LatestLink{dir: d}
	l.ro = roNode{d.env, &l.Inode}
	l.fill(&out.Attr, latest)
	out.SetEntryTimeout(d.env.Opts.ShortTimeout)
	out.SetAttrTimeout(d.env.Opts.ShortTimeout)
	return d.NewInode(ctx, l, fs.StableAttr{Mode: syscall.S_IFLNK, Ino: l.ino()}), 0
}

// timeChild returns the symlink @<timestamp> -> @vN.
func (d *TableDir) timeChild(ctx context.Context, name string, v int64, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ino := StableIno(kindTimeLink, d.name, v, name)
	l := &TimeLink{target: versionName(v), ino: ino, owner: d.access().Owner}
	l.ro = roNode{d.env, &l.Inode}
	FillAttr(&out.Attr, ino, modeSymlink, l.owner, int64(len(l.target)), time.Time{})
	// Short: a time in the future (ENOENT now) or past the last commit
	// may resolve differently once a commit lands.
	out.SetEntryTimeout(d.env.Opts.ShortTimeout)
	out.SetAttrTimeout(d.env.Opts.ShortTimeout)
	return d.NewInode(ctx, l, fs.StableAttr{Mode: syscall.S_IFLNK, Ino: ino}), 0
}

// changesChild returns @changes.
func (d *TableDir) changesChild(ctx context.Context, out *fuse.EntryOut) *fs.Inode {
	c := &ChangesDir{dir: d}
	c.ro = roNode{d.env, &c.Inode}
	acc := d.access()
	FillAttr(&out.Attr, c.ino(), acc.Dir(), acc.Owner, 0, time.Time{})
	out.SetEntryTimeout(d.env.Opts.LongTimeout)
	out.SetAttrTimeout(d.env.Opts.LongTimeout)
	return d.NewInode(ctx, c, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: c.ino()})
}

// historyChild returns _history.jsonl.
func (d *TableDir) historyChild(ctx context.Context, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	h := &HistoryFile{dir: d}
	h.ro = roNode{d.env, &h.Inode}
	if errno := h.fill(ctx, &out.Attr); errno != 0 {
		return nil, errno
	}
	out.SetEntryTimeout(d.env.Opts.ShortTimeout)
	out.SetAttrTimeout(d.env.Opts.ShortTimeout)
	if ch := d.GetChild(HistoryName); ch != nil {
		return ch, 0
	}
	return d.NewInode(ctx, h, fs.StableAttr{Mode: syscall.S_IFREG, Ino: h.ino()}), 0
}

// reasonChild returns _deltafs_error.txt, saying why the table is refused.
func (d *TableDir) reasonChild(ctx context.Context, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	r := &ReasonFile{dir: d}
	r.ro = roNode{d.env, &r.Inode}
	ino := StableIno(kindReason, d.name, 0, "")
	acc := d.access()
	FillAttr(&out.Attr, ino, acc.File(), acc.Owner, int64(len(r.text())), time.Time{})
	out.SetEntryTimeout(d.env.Opts.ShortTimeout)
	out.SetAttrTimeout(d.env.Opts.ShortTimeout)
	return d.NewInode(ctx, r, fs.StableAttr{Mode: syscall.S_IFREG, Ino: ino}), 0
}
