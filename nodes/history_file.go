package nodes

import (
	"context"
	"encoding/json"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// HistoryFile is <table>/_history.jsonl: one JSON object per commit
// (version, timestamp, operation, operationParameters, operationMetrics,
// ...), oldest first, as the engine's History returns them. Its content
// is rebuilt when the table's newest version moves; opens see the content
// of the moment (direct I/O, so the size stat reported cannot go stale in
// the page cache).
type HistoryFile struct {
	fs.Inode
	readOnlyFile

	dir *TableDir

	mu      sync.Mutex
	version int64  // guarded by mu: newest version data describes
	data    []byte // guarded by mu: nil until built
}

var (
	_ = (fs.NodeGetattrer)((*HistoryFile)(nil))
	_ = (fs.NodeOpener)((*HistoryFile)(nil))
)

func (h *HistoryFile) ino() uint64 { return stableIno(kindHistory, h.dir.name, 0, "") }

// content returns the JSON lines for the table's newest known version.
func (h *HistoryFile) content(ctx context.Context) ([]byte, syscall.Errno) {
	latest, err := h.dir.current(ctx)
	if latest == nil {
		return nil, refusedErrno(err)
	}
	h.mu.Lock()
	data, v := h.data, h.version
	h.mu.Unlock()
	if data != nil && v == latest.Version() {
		return data, 0
	}
	hist, err := h.dir.table.History(ctx)
	if err != nil {
		return nil, h.dir.env.metaErrno("read history", err, "table", h.dir.name)
	}
	var buf []byte
	for _, c := range hist {
		line, err := json.Marshal(c)
		if err != nil {
			return nil, h.dir.env.metaErrno("encode history", err, "table", h.dir.name, "version", c.Version)
		}
		buf = append(append(buf, line...), '\n')
	}
	if buf == nil {
		buf = []byte{}
	}
	h.mu.Lock()
	h.data, h.version = buf, latest.Version()
	h.mu.Unlock()
	return buf, 0
}

func (h *HistoryFile) fill(ctx context.Context, a *fuse.Attr) syscall.Errno {
	data, errno := h.content(ctx)
	if errno != 0 {
		return errno
	}
	latest, _ := h.dir.current(ctx)
	fillAttr(a, h.ino(), modeFile, int64(len(data)), snapTime(latest))
	return 0
}

// Getattr reports the current size.
func (h *HistoryFile) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if errno := h.fill(ctx, &out.Attr); errno != 0 {
		return errno
	}
	out.SetTimeout(h.dir.env.Opts.ShortTimeout)
	return 0
}

// Open returns the history as of now.
func (h *HistoryFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if isWriteOpen(flags) {
		return nil, 0, errReadOnly
	}
	data, errno := h.content(ctx)
	if errno != 0 {
		return nil, 0, errno
	}
	return bytesHandle(data), fuse.FOPEN_DIRECT_IO, 0
}
