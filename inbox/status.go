package inbox

// _status.jsonl: one line per outcome, its error text capped, and the
// recent refusals the status file shows.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/deltafs/deltafs/nodes"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// StatusEvent is one line of _status.jsonl (nodes.StatusEvent: the
// status file shows the recent refusals).
type StatusEvent = nodes.StatusEvent

// statusRefusalsShown bounds the recent refusals listed per inbox.
const statusRefusalsShown = 20

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
		return nodes.BytesHandle(slices.Clone(l.mem)), nil
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

// InfoFile is a read-only file of the inbox root whose content is
// computed when opened: _status.jsonl (recent outcomes) and, when the
// table is not writable, _deltafs_error.txt (why).
type InfoFile struct {
	fs.Inode
	nodes.ReadOnlyFile

	in   *Inbox
	name string
}

var (
	_ = (fs.NodeGetattrer)((*InfoFile)(nil))
	_ = (fs.NodeOpener)((*InfoFile)(nil))
)

func (f *InfoFile) ino() uint64 { return nodes.StableIno(nodes.KindInbox, f.in.name, 0, f.name) }

// text returns the content of _deltafs_error.txt as of now.
func (f *InfoFile) text(ctx context.Context) []byte {
	err := f.in.writable(ctx)
	if err == nil {
		return []byte{}
	}
	return []byte("deltafs cannot append to table " + f.in.name + ": " + err.Error() + "\n")
}

// Getattr reports a read-only file of the current size.
func (f *InfoFile) Getattr(ctx context.Context, h fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	acc := f.in.dir.InboxAccess()
	nodes.FillAttr(&out.Attr, f.ino(), acc.File(), acc.Owner, f.size(ctx), time.Time{})
	out.SetTimeout(inboxTimeout)
	return 0
}

// size is the content's size as of now.
func (f *InfoFile) size(ctx context.Context) int64 {
	if f.name == StatusName {
		return f.in.status.length()
	}
	return int64(len(f.text(ctx)))
}

// Open returns the content as of now (direct I/O: it changes size).
func (f *InfoFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if nodes.IsWriteOpen(flags) {
		return nil, 0, syscall.EPERM
	}
	if f.name == StatusName {
		h, err := f.in.status.open()
		if err != nil {
			return nil, 0, f.in.tree.DataErrno("read "+StatusName, err, "table", f.in.name)
		}
		return h, fuse.FOPEN_DIRECT_IO, 0
	}
	return nodes.BytesHandle(f.text(ctx)), fuse.FOPEN_DIRECT_IO, 0
}

// statusErrorMax caps the error text of one status line: a
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

// State returns the inbox's writability, staged files and outcomes.
func (in *Inbox) State(ctx context.Context) *nodes.InboxState {
	st := &nodes.InboxState{Writable: true, Pending: in.pending(), Refused: []StatusEvent{}}
	if err := in.writable(ctx); err != nil {
		st.Writable, st.NotWritable = false, err.Error()
	}
	st.Commits, st.Refusals, st.Refused = in.status.counts()
	return st
}

// pending lists the staged files under the inbox, sorted by path.
func (in *Inbox) pending() []nodes.PendingFile {
	in.mu.Lock()
	root := in.root
	in.mu.Unlock()
	out := []nodes.PendingFile{}
	if root == nil {
		return out
	}
	var walk func(n *fs.Inode)
	walk = func(n *fs.Inode) {
		for _, ch := range n.Children() {
			switch op := ch.Operations().(type) {
			case *Dir:
				walk(ch)
			case *File:
				if p, ok := op.pendingFile(); ok {
					out = append(out, p)
				}
			}
		}
	}
	walk(root)
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

// pendingFile describes f unless its outcome is decided.
func (f *File) pendingFile() (nodes.PendingFile, bool) {
	rel := f.rel()
	f.mu.Lock()
	state, size, temp := f.state, f.size, f.temporaryLocked()
	f.mu.Unlock()
	if state == stateDone {
		return nodes.PendingFile{}, false
	}
	if st, err := os.Stat(f.path); err == nil {
		size = st.Size()
	}
	return nodes.PendingFile{File: rel, Bytes: size, Committing: state == stateCommitting, Temporary: temp}, true
}
