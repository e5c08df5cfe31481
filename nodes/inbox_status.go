package nodes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// StatusEvent is one line of inbox/_status.jsonl: the outcome of a staged
// file or a batch (Op "commit", by close() or rename()), a refused
// create, mkdir or rename, a temporary staged at its close (Op "staged":
// how it commits, when it expires), or a stale staged file removed (Op
// "expire").
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
	// Note says, for a staged temporary (Op "staged"), how it commits;
	// Expires is when it is removed uncommitted if left idle.
	Note    string     `json:"note,omitempty"`
	Expires *time.Time `json:"expires,omitempty"`
}

// statusLog keeps every event of one inbox for as long as the mount
// runs: the lines in an append-only file beside the inbox's staging
// directory (removed with it at unmount), and in memory only the counts
// and the last refusals (for .deltafs-status.json). An acknowledgement's
// outcome is never pushed out by later ones. Without a file (it could
// not be made) the lines are kept in memory.
type statusLog struct {
	path string

	mu       sync.Mutex
	file     *os.File      // guarded by mu: the lines, nil without a file
	mem      []byte        // guarded by mu: the lines when file is nil
	size     int64         // guarded by mu: bytes of lines so far
	commits  int           // guarded by mu
	refusals int           // guarded by mu
	recent   []StatusEvent // guarded by mu: the last statusRefusalsShown refusals, oldest first
}

// newStatusLog returns a log writing its lines to path ("" keeps them in
// memory).
func newStatusLog(path string) *statusLog {
	l := &statusLog{path: path}
	if path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
		if err == nil {
			l.file = f
		}
	}
	return l
}

// add appends e, stamped now.
func (l *statusLog) add(e StatusEvent) {
	e.Time = time.Now().UTC()
	e.Error = capText(e.Error, statusErrorMax)
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false) // errors say <value>, not \u003cvalue\u003e
	_ = enc.Encode(e)        // cannot fail: plain fields; one line each
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case e.Op == "expire", e.Op == "staged": // a stale staged file removed, a temporary kept: neither
	case e.Error == "":
		l.commits++
	default:
		l.refusals++
		l.recent = append(l.recent, e)
		if len(l.recent) > 2*statusRefusalsShown {
			l.recent = append(l.recent[:0], l.recent[len(l.recent)-statusRefusalsShown:]...)
		}
	}
	if l.file != nil {
		if _, err := l.file.Write(line.Bytes()); err == nil {
			l.size += int64(line.Len())
			return
		}
		// The disk failed: keep what it holds readable, the rest in memory.
		data, _ := os.ReadFile(l.path)
		l.file.Close()
		l.file, l.mem = nil, data[:min(int64(len(data)), l.size)]
	}
	l.mem = append(l.mem, line.Bytes()...)
	l.size = int64(len(l.mem))
}

// counts returns the commits and refusals so far and the last refusals.
func (l *statusLog) counts() (commits, refusals int, recent []StatusEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	recent = l.recent[max(len(l.recent)-statusRefusalsShown, 0):]
	return l.commits, l.refusals, slices.Clone(recent)
}

// length is the size of the lines so far.
func (l *statusLog) length() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}

// open returns a handle on the lines as of now.
func (l *statusLog) open() (fs.FileHandle, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return bytesHandle(slices.Clone(l.mem)), nil
	}
	f, err := os.Open(l.path)
	if err != nil {
		return nil, err
	}
	return &fileRangeHandle{f: f, size: l.size}, nil
}

// jsonl returns the lines as of now.
func (l *statusLog) jsonl() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return slices.Clone(l.mem)
	}
	data, _ := os.ReadFile(l.path)
	return data[:min(int64(len(data)), l.size)]
}

// close closes the file of lines (the mount removes it with the staging
// directory).
func (l *statusLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		l.file.Close()
	}
}

// fileRangeHandle is an open file serving the first size bytes of f.
type fileRangeHandle struct {
	f    *os.File
	size int64
}

var (
	_ = (fs.FileReader)((*fileRangeHandle)(nil))
	_ = (fs.FileReleaser)((*fileRangeHandle)(nil))
)

// Read returns the bytes at off, up to size.
func (h *fileRangeHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= h.size {
		return fuse.ReadResultData(nil), 0
	}
	n, err := h.f.ReadAt(dest[:min(int64(len(dest)), h.size-off)], off)
	if err != nil && err != io.EOF {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Release closes the file.
func (h *fileRangeHandle) Release(ctx context.Context) syscall.Errno {
	h.f.Close()
	return 0
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

// text returns the content of _deltafs_error.txt as of now.
func (f *InboxInfoFile) text(ctx context.Context) []byte {
	err := f.in.writable(ctx)
	if err == nil {
		return []byte{}
	}
	return []byte("deltafs cannot append to table " + f.in.dir.name + ": " + err.Error() + "\n")
}

// Getattr reports a read-only file of the current size.
func (f *InboxInfoFile) Getattr(ctx context.Context, h fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	acc := f.in.dir.inboxAccess()
	fillAttr(&out.Attr, f.ino(), acc.file(), acc.owner, f.size(ctx), time.Time{})
	out.SetTimeout(inboxTimeout)
	return 0
}

// size is the content's size as of now.
func (f *InboxInfoFile) size(ctx context.Context) int64 {
	if f.name == InboxStatusName {
		return f.in.status.length()
	}
	return int64(len(f.text(ctx)))
}

// Open returns the content as of now (direct I/O: it changes size).
func (f *InboxInfoFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if isWriteOpen(flags) {
		return nil, 0, syscall.EPERM
	}
	if f.name == InboxStatusName {
		h, err := f.in.status.open()
		if err != nil {
			return nil, 0, f.in.dir.env.dataErrno("read "+InboxStatusName, err, "table", f.in.dir.name)
		}
		return h, fuse.FOPEN_DIRECT_IO, 0
	}
	return bytesHandle(f.text(ctx)), fuse.FOPEN_DIRECT_IO, 0
}

// statusErrorMax caps the error text of one status line (issue 20): a
// refusal quoting what a hostile file declares must not make a line of
// kilobytes; the log line keeps the whole text.
const statusErrorMax = 1024

// capText cuts s to at most max bytes, at a UTF-8 boundary, saying how
// much was cut.
func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - 32
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("... (%d bytes cut)", len(s)-n)
}
