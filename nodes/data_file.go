package nodes

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/serve"
)

// DataFile is one live data file of a snapshot. Package serve decides
// how it is served: byte for byte from storage, or rewritten (deleted
// rows removed, logical column names, the snapshot's columns), and gives
// its exact size before the first stat is answered. Its content never
// changes: long kernel timeouts and FOPEN_KEEP_CACHE. A file that cannot
// be served still stats (statSize); its open fails with EIO, logged and
// recorded in the status file.
type DataFile struct {
	fs.Inode
	ReadOnlyFile

	ref   *snapRef     // the first version it was looked up in, shared with its directories
	add   *delta.Add   // the live file's add action (shared with the snapshot)
	path  string       // path inside the snapshot directory
	inode uint64       // fileIno: shared by the versions that serve the same bytes
	size  atomic.Int64 // served size, -1 until known
	stale atomic.Bool  // a stat reported the stored size: the served one failed
}

var (
	_ = (fs.NodeGetattrer)((*DataFile)(nil))
	_ = (fs.NodeOpener)((*DataFile)(nil))
	_ = (fs.NodeGetxattrer)((*DataFile)(nil))
	_ = (fs.NodeListxattrer)((*DataFile)(nil))
)

// newDataFile returns the node of add at path p of ref's snapshot, whose
// tree is t.
func newDataFile(ref *snapRef, t *snapshotTree, add *delta.Add, p string) *DataFile {
	d := &DataFile{ref: ref, add: add, path: p, inode: fileIno(ref.name, add, t.servedAs)}
	d.ro = roNode{ref.env, &d.Inode}
	d.size.Store(-1)
	return d
}

func (d *DataFile) ino() uint64 { return d.inode }

func (d *DataFile) env() *Env { return d.ref.env }

// logAttrs names the file in log lines.
func (d *DataFile) logAttrs() []any {
	return []any{"table", d.ref.name, "version", d.ref.version, "file", d.path, "path", d.add.Path}
}

// live returns the file's snapshot (from the table's cache, or rebuilt)
// and its LiveFile.
func (d *DataFile) live(ctx context.Context) (*delta.Snapshot, *delta.LiveFile, error) {
	snap, err := d.ref.snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	f, err := snap.LiveFileOf(d.add)
	if err != nil {
		return nil, nil, err
	}
	return snap, &f, nil
}

// servedSize returns the size of the served bytes, materializing the file
// on first use when it needs rewriting.
func (d *DataFile) servedSize(ctx context.Context) (int64, error) {
	if n := d.size.Load(); n >= 0 {
		return n, nil
	}
	snap, err := d.ref.snapshot(ctx)
	if err != nil {
		return 0, err
	}
	if n, ok := d.ref.files.KnownSize(snap, d.add); ok { // a listing's stats: decided ahead (Warm)
		d.size.Store(n)
		return n, nil
	}
	f, err := snap.LiveFileOf(d.add)
	if err != nil {
		return 0, err
	}
	n, err := d.ref.files.Size(ctx, snap, &f)
	if err != nil {
		return 0, err
	}
	d.size.Store(n)
	return n, nil
}

// statSize is the size stat reports, and whether it is the served size. A
// listed file always stats: when its served size cannot be computed (a
// missing or corrupt deletion vector, an unreadable footer), stat reports
// the stored size and the failure is the open's, an error no reader can
// miss, where a failed stat makes globs skip the file silently.
func (d *DataFile) statSize(ctx context.Context) (n int64, exact bool, errno syscall.Errno) {
	n, err := d.servedSize(ctx)
	if err == nil {
		return n, true, 0
	}
	d.stale.Store(true)
	return d.add.Size, false, statErrno(err)
}

// fill sets the attributes of the file and returns the kernel timeout:
// long, short while the served size is not known.
func (d *DataFile) fill(ctx context.Context, a *fuse.Attr) (time.Duration, syscall.Errno) {
	n, exact, errno := d.statSize(ctx)
	if errno != 0 {
		return 0, errno
	}
	acc := d.ref.dir.access()
	if d.ref.dir.perms.perms != nil {
		if _, f, err := d.live(ctx); err == nil {
			acc = d.ref.dir.fileAccess(f)
		}
	}
	FillAttr(a, d.ino(), acc.File(), acc.Owner, n, time.UnixMilli(d.add.ModificationTime))
	if !exact {
		return d.env().Opts.ShortTimeout, 0
	}
	return d.env().Opts.LongTimeout, 0
}

// Getattr reports the served size and the add action's modification time.
func (d *DataFile) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	timeout, errno := d.fill(ctx, &out.Attr)
	if errno != 0 {
		return errno
	}
	out.SetTimeout(timeout)
	return 0
}

// Open opens the served bytes: through kernel passthrough when they are in
// a local file and passthrough is on; else read in userspace, with the
// kernel page cache kept across opens for stored files, and bypassed for
// rewritten ones.
func (d *DataFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if IsWriteOpen(flags) {
		return nil, 0, d.ro.refuse("open for writing", "")
	}
	c, err := d.openContent(ctx)
	if err != nil {
		return nil, 0, d.fail("open", err)
	}
	h := &dataHandle{file: d, content: c, passthrough: d.env().Opts.Passthrough}
	// A rewritten file served as a composite (ranges of the stored file and
	// of a patch in the disk cache) has no single file the kernel could pass
	// through, and filling the FUSE page cache is most of the cost of a
	// userspace read (fresh pages for every byte): bypassing it makes the
	// first read about twice as fast, and the bytes are not cached twice. Only when the kernel granted
	// FUSE_DIRECT_IO_ALLOW_MMAP, so that mmap of these files keeps working.
	// A small one (under passthroughMin, like the stored files that are not
	// passed through) goes through the page cache instead: a reader's few
	// reads of it (footer, then columns) are one readahead request instead
	// of one request each, and later opens read the kernel's pages (a
	// second DuckDB count over 100,000 small files with
	// --partition-columns on one mount: 41.9 s with direct I/O, 33.1 s).
	if serve.IsRewritten(c) && d.env().directIO.Load() && c.Size() >= passthroughMin {
		return h, fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NOFLUSH, 0
	}
	return h, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

// openContent opens the bytes and checks they have the size stat reported,
// so that a file changed behind the log is an error, never wrong data.
func (d *DataFile) openContent(ctx context.Context) (serve.Content, error) {
	snap, f, err := d.live(ctx)
	if err != nil {
		return nil, err
	}
	c, err := d.ref.files.Open(ctx, snap, f)
	if errors.Is(err, serve.ErrDamagedCache) {
		// The size stat reported came from a damaged cache file: ask again,
		// and have the kernel ask again once an open succeeds.
		d.size.Store(-1)
		d.stale.Store(true)
	}
	if err != nil {
		return nil, err
	}
	want, err := d.servedSize(ctx)
	if err != nil {
		c.Close()
		return nil, err
	}
	if d.stale.Swap(false) {
		// A stat reported the stored size while the served one failed;
		// it is known now: have the kernel ask again (outside this request).
		go d.NotifyContent(-1, 0)
	}
	if c.Size() != want {
		c.Close()
		return nil, fmt.Errorf("%w: stored size %d, the log says %d", delta.ErrCorruptLog, c.Size(), want)
	}
	return c, nil
}
