package nodes

import (
	"context"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/delta"
)

// HistoryFile is <table>/_history.jsonl: one JSON object per commit
// (version, timestamp, operation, operationParameters, operationMetrics,
// ...), oldest first, as the engine's HistoryEach gives them.
//
// It reports its true size, that of the lines of versions 0..@latest
// (TableDir.hist: counted once, then extended by the new versions' lines),
// so that readers that read a file by its size (DuckDB's read_json) see
// every line; the content is produced while it is read, a batch of
// commits at a time, so that neither a stat nor a read of the history of
// a 1,000,000-commit table holds it whole. It is served with direct I/O.
//
// A stat and a later read agree although @latest moves between them: the
// lines of 0..N are a prefix of those of 0..M, so the first size(N) bytes
// are those of 0..N whatever the handle was opened for, and a handle
// opened for N goes on past them when @latest moved since (a reader whose
// stat came after its open). Reading to end of file gives the lines up to
// @latest as of when the end is reached.
type HistoryFile struct {
	fs.Inode
	ReadOnlyFile

	dir *TableDir
}

var (
	_ = (fs.NodeGetattrer)((*HistoryFile)(nil))
	_ = (fs.NodeOpener)((*HistoryFile)(nil))
)

func (h *HistoryFile) ino() uint64 { return StableIno(kindHistory, h.dir.name, 0, "") }

// fill reports the size of the lines up to @latest. A listed entry always
// stats: when the size cannot be computed (a commit that cannot be read),
// it reports 0 and the open fails with the reason.
func (h *HistoryFile) fill(ctx context.Context, a *fuse.Attr) syscall.Errno {
	latest, err := h.dir.current(ctx)
	if latest == nil {
		return refusedErrno(err)
	}
	n, err := h.dir.hist.size(ctx, h.dir.table, latest.Version())
	if err != nil {
		if errno := statErrno(err); errno != 0 {
			return errno
		}
		n = 0
	}
	acc := h.dir.access()
	FillAttr(a, h.ino(), acc.File(), acc.Owner, n, snapTime(latest))
	return 0
}

// Getattr reports the size of the lines of versions 0..@latest.
func (h *HistoryFile) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if errno := h.fill(ctx, &out.Attr); errno != 0 {
		return errno
	}
	out.SetTimeout(h.dir.env.Opts.ShortTimeout)
	return 0
}

// Open starts a read of the history up to the newest version known now.
func (h *HistoryFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if IsWriteOpen(flags) {
		return nil, 0, h.ro.refuse("open for writing", "")
	}
	latest, err := h.dir.current(ctx)
	if latest == nil {
		return nil, 0, refusedErrno(err)
	}
	if _, err := h.dir.hist.size(ctx, h.dir.table, latest.Version()); err != nil {
		return nil, 0, h.dir.env.metaErrno("read history", err, "table", h.dir.name, "version", latest.Version(), "file", HistoryName)
	}
	return &historyHandle{file: h, to: latest.Version()}, fuse.FOPEN_DIRECT_IO, 0
}

// historyHandle produces the JSON lines of versions 0..to as they are
// read, and of the versions after to once they are wanted and @latest
// has moved past to. It keeps the bytes from the lowest offset still
// wanted (reads are sequential in practice); a read before them starts
// over.
type historyHandle struct {
	file *HistoryFile

	mu    sync.Mutex
	to    int64  // guarded by mu: the newest version to summarize
	start int64  // guarded by mu: file offset of buf[0]
	buf   []byte // guarded by mu: produced bytes not yet passed
	next  int64  // guarded by mu: next version to summarize
	done  bool   // guarded by mu: every version up to to summarized
}

var _ = (fs.FileReader)((*historyHandle)(nil))

// historyChunk is how many versions one fill summarizes.
const historyChunk = 512

// Read returns the bytes at off, producing lines up to off+len(dest).
func (hh *historyHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	hh.mu.Lock()
	defer hh.mu.Unlock()
	if off < hh.start {
		hh.start, hh.buf, hh.next, hh.done = 0, nil, 0, false
	}
	end := off + int64(len(dest))
	for hh.start+int64(len(hh.buf)) < end && (!hh.done || hh.movedLocked(ctx)) {
		if drop := min(off-hh.start, int64(len(hh.buf))); drop > 0 {
			hh.buf = append(hh.buf[:0], hh.buf[drop:]...)
			hh.start += drop
		}
		if errno := hh.fillLocked(ctx); errno != 0 {
			return nil, errno
		}
	}
	if off >= hh.start+int64(len(hh.buf)) {
		return fuse.ReadResultData(nil), 0
	}
	n := copy(dest, hh.buf[off-hh.start:]) // buf changes with the next read
	return fuse.ReadResultData(dest[:n]), 0
}

// movedLocked reports whether @latest moved past to (then extending to
// it): a read past the end wants the newer lines.
func (hh *historyHandle) movedLocked(ctx context.Context) bool {
	latest, _ := hh.file.dir.current(ctx)
	if latest == nil || latest.Version() <= hh.to {
		return false
	}
	hh.to, hh.done = latest.Version(), false
	return true
}

// fillLocked appends the lines of the next historyChunk versions.
func (hh *historyHandle) fillLocked(ctx context.Context) syscall.Errno {
	d := hh.file.dir
	last := min(hh.next+historyChunk-1, hh.to)
	err := d.table.HistoryEach(ctx, hh.next, last, func(c delta.CommitSummary) error {
		hh.buf = c.AppendLine(hh.buf)
		return nil
	})
	if err != nil {
		return d.env.metaErrno("read history", err, "table", d.name, "version", hh.next, "file", HistoryName)
	}
	hh.next = last + 1
	hh.done = hh.next > hh.to
	return 0
}
