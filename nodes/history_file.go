package nodes

import (
	"context"
	"encoding/json"
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
// Like a /proc file it reports size 0 and is served with direct I/O: its
// content is produced while it is read, from the commits of the versions
// up to the newest one at open time, a batch of commits at a time, so that
// neither a stat nor a read of the history of a 1,000,000-commit table
// holds it whole. Tools that read to end of file (cat, jq, grep, tail,
// Python's read(), os.ReadFile) see every line.
type HistoryFile struct {
	fs.Inode
	readOnlyFile

	dir *TableDir
}

var (
	_ = (fs.NodeGetattrer)((*HistoryFile)(nil))
	_ = (fs.NodeOpener)((*HistoryFile)(nil))
)

func (h *HistoryFile) ino() uint64 { return stableIno(kindHistory, h.dir.name, 0, "") }

func (h *HistoryFile) fill(ctx context.Context, a *fuse.Attr) syscall.Errno {
	latest, err := h.dir.current(ctx)
	if latest == nil {
		return refusedErrno(err)
	}
	fillAttr(a, h.ino(), modeFile, 0, snapTime(latest))
	return 0
}

// Getattr reports size 0 (the content is produced as it is read).
func (h *HistoryFile) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if errno := h.fill(ctx, &out.Attr); errno != 0 {
		return errno
	}
	out.SetTimeout(h.dir.env.Opts.ShortTimeout)
	return 0
}

// Open starts a read of the history up to the newest version known now.
func (h *HistoryFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if isWriteOpen(flags) {
		return nil, 0, h.ro.refuse("open for writing", "")
	}
	latest, err := h.dir.current(ctx)
	if latest == nil {
		return nil, 0, refusedErrno(err)
	}
	return &historyHandle{file: h, to: latest.Version()}, fuse.FOPEN_DIRECT_IO, 0
}

// historyHandle produces the JSON lines of versions 0..to as they are
// read. It keeps the bytes from the lowest offset still wanted (reads are
// sequential in practice); a read before them starts over.
type historyHandle struct {
	file *HistoryFile
	to   int64

	mu    sync.Mutex
	start int64  // guarded by mu: file offset of buf[0]
	buf   []byte // guarded by mu: produced bytes not yet passed
	next  int64  // guarded by mu: next version to summarize
	done  bool   // guarded by mu: every version summarized
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
	for !hh.done && hh.start+int64(len(hh.buf)) < end {
		if drop := off - hh.start; drop > 0 {
			hh.buf = append(hh.buf[:0], hh.buf[drop:]...)
			hh.start = off
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

// fillLocked appends the lines of the next historyChunk versions.
func (hh *historyHandle) fillLocked(ctx context.Context) syscall.Errno {
	d := hh.file.dir
	last := min(hh.next+historyChunk-1, hh.to)
	err := d.table.HistoryEach(ctx, hh.next, last, func(c delta.CommitSummary) error {
		line, err := json.Marshal(c)
		if err != nil {
			return err
		}
		hh.buf = append(append(hh.buf, line...), '\n')
		return nil
	})
	if err != nil {
		return d.env.metaErrno("read history", err, "table", d.name, "from", hh.next)
	}
	hh.next = last + 1
	hh.done = hh.next > hh.to
	return 0
}
