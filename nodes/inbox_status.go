package nodes

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// statusKeep is how many events an inbox's status file keeps.
const statusKeep = 256

// StatusEvent is one line of inbox/_status.jsonl: the outcome of a staged
// file or a batch (Op "commit", by close() or rename()), a refused
// create, mkdir or rename, or a stale staged file removed (Op "expire").
// A commit that landed has Version; a refusal has Error and the Errno
// close() (or the operation) returned. A file refused by close() is
// removed; one refused by rename() stays under its temporary name From
// (but for EIO: inbox_rename.go).
type StatusEvent struct {
	Time    time.Time `json:"time"`
	Op      string    `json:"op"`
	File    string    `json:"file"`            // path under inbox/
	From    string    `json:"from,omitempty"`  // a rename's temporary path under inbox/
	Files   int       `json:"files,omitempty"` // the Parquet files of a batch's commit
	Bytes   int64     `json:"bytes,omitempty"`
	Version *int64    `json:"version,omitempty"`
	Error   string    `json:"error,omitempty"`
	Errno   string    `json:"errno,omitempty"`
}

// statusLog keeps the last events of one inbox, for this mount only.
type statusLog struct {
	keep int

	mu     sync.Mutex
	events []StatusEvent // guarded by mu: oldest first, at most keep
}

func newStatusLog(keep int) *statusLog { return &statusLog{keep: keep} }

// add appends e, stamped now, dropping the oldest event beyond keep.
func (l *statusLog) add(e StatusEvent) {
	e.Time = time.Now().UTC()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) >= l.keep {
		l.events = append(l.events[:0], l.events[len(l.events)-l.keep+1:]...)
	}
	l.events = append(l.events, e)
}

// jsonl returns the events as JSON lines.
func (l *statusLog) jsonl() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // errors say <value>, not \u003cvalue\u003e
	for _, e := range l.events {
		_ = enc.Encode(e) // cannot fail: plain fields; one line each
	}
	return out.Bytes()
}

// InboxInfoFile is a read-only file of the inbox root whose content is
// computed when opened: _status.jsonl (recent outcomes) and, when the
// table is not writable, _deltafs_error.txt (why).
type InboxInfoFile struct {
	fs.Inode
	readOnlyFile

	in   *inbox
	name string
}

var (
	_ = (fs.NodeGetattrer)((*InboxInfoFile)(nil))
	_ = (fs.NodeOpener)((*InboxInfoFile)(nil))
)

func (f *InboxInfoFile) ino() uint64 { return stableIno(kindInbox, f.in.dir.name, 0, f.name) }

// text returns the content as of now.
func (f *InboxInfoFile) text(ctx context.Context) []byte {
	if f.name == InboxStatusName {
		return f.in.status.jsonl()
	}
	err := f.in.writable(ctx)
	if err == nil {
		return []byte{}
	}
	return []byte("deltafs cannot append to table " + f.in.dir.name + ": " + err.Error() + "\n")
}

// Getattr reports a read-only file of the current size.
func (f *InboxInfoFile) Getattr(ctx context.Context, h fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	fillAttr(&out.Attr, f.ino(), modeFile, int64(len(f.text(ctx))), time.Time{})
	out.SetTimeout(inboxTimeout)
	return 0
}

// Open returns the content as of now (direct I/O: it changes size).
func (f *InboxInfoFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if isWriteOpen(flags) {
		return nil, 0, syscall.EPERM
	}
	return bytesHandle(f.text(ctx)), fuse.FOPEN_DIRECT_IO, 0
}
