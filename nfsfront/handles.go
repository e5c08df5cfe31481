package nfsfront

// File handles: a hash of the path, the same in every run, and the journal
// that maps handles given out back to their paths.

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// A file handle is a hash of its path (handleSize bytes, NFSv3 allows
// 64): the same path has the same handle in every run of the server,
// which a client holding handles across a restart needs. Going back from
// a handle to its path needs the path to have been given out before, in
// this run or one whose journal this run read; an unknown handle is
// NFS3ERR_STALE, and the client looks the path up again from the root.
const handleSize = 16

// maxHandles bounds the handles remembered (about 150 bytes each, in
// memory and in the journal).
const maxHandles = 1 << 18

// handleOf returns the handle of path p.
func handleOf(p string) [handleSize]byte {
	sum := sha256.Sum256([]byte("deltafs-nfs/v1\x00" + clean(p)))
	var key [handleSize]byte
	copy(key[:], sum[:])
	return key
}

// handles maps file handles back to paths. A handle is a hash of its
// path, the same in every run of the server; a client that kept handles
// across a restart (macOS silently drops writes when its handles go
// stale) needs the server to know their paths again, so the handles
// given out are also appended to a journal that the next run reads.
//
// The journal holds one line per handle given ("HEX PATH"); it is
// rewritten from memory when it has grown to twice the handles kept.
// Lines are flushed every journalFlush: a handle given out just before a
// crash may be unknown after it (NFS3ERR_STALE; the client looks the
// path up again).
type handles struct {
	mu    sync.Mutex
	paths *lru.Cache[[handleSize]byte, string] // guarded by mu

	path  string        // the journal ("" for none)
	f     *os.File      // guarded by mu
	w     *bufio.Writer // guarded by mu
	lines int           // guarded by mu: lines in the journal
	log   *slog.Logger
	stop  chan struct{}
	done  chan struct{}
}

// journalFlush is how often new journal lines are written out.
const journalFlush = 100 * time.Millisecond

// newHandles returns the handle map, reading and continuing the journal
// at path (none if path is "").
func newHandles(path string, log *slog.Logger) *handles {
	h := &handles{path: path, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	h.paths, _ = lru.New[[handleSize]byte, string](maxHandles)
	if path == "" {
		close(h.done)
		return h
	}
	if err := h.load(); err != nil && !os.IsNotExist(err) {
		h.warn("read the NFS handle journal", err)
	}
	if err := h.rewrite(); err != nil {
		h.warn("write the NFS handle journal", err)
	}
	go h.flushLoop()
	return h
}

func (h *handles) warn(what string, err error) {
	if h.log != nil {
		h.log.Warn("deltafs: nfs: "+what+"; handles from before this start are unknown to clients (they look paths up again)", "file", h.path, "err", err)
	}
}

// load reads the journal into memory (later lines win).
func (h *handles) load() error {
	f, err := os.Open(h.path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		hexKey, p, ok := strings.Cut(sc.Text(), " ")
		b, err := hex.DecodeString(hexKey)
		if !ok || err != nil || len(b) != handleSize || handleOf(p) != [handleSize]byte(b) {
			continue // torn or foreign: skipped
		}
		h.paths.Add([handleSize]byte(b), p)
	}
	return sc.Err()
}

// rewrite replaces the journal by the handles in memory. Called with
// h.mu held or before the handles are shared.
func (h *handles) rewrite() error {
	tmp := h.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, k := range h.paths.Keys() {
		p, _ := h.paths.Peek(k)
		fmt.Fprintf(w, "%x %s\n", k, p)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := os.Rename(tmp, h.path); err != nil {
		f.Close()
		return err
	}
	if h.f != nil {
		h.w.Flush()
		h.f.Close()
	}
	h.f, h.w, h.lines = f, bufio.NewWriter(f), h.paths.Len()
	return nil
}

// add remembers the path of a handle, journaling a new one.
func (h *handles) add(key [handleSize]byte, p string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.paths.Get(key); ok && old == p {
		return
	}
	h.paths.Add(key, p)
	if h.w == nil {
		return
	}
	fmt.Fprintf(h.w, "%x %s\n", key, p)
	if h.lines++; h.lines > 2*maxHandles {
		if err := h.rewrite(); err != nil {
			h.warn("rewrite the NFS handle journal", err)
		}
	}
}

func (h *handles) get(key [handleSize]byte) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.paths.Get(key)
}

func (h *handles) flushLoop() {
	defer close(h.done)
	tick := time.NewTicker(journalFlush)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
			h.mu.Lock()
			if err := h.w.Flush(); err != nil && err != io.ErrShortWrite {
				h.warn("write the NFS handle journal", err)
			}
			h.mu.Unlock()
		}
	}
}

// close writes out and closes the journal.
func (h *handles) close() {
	if h.path == "" {
		return
	}
	close(h.stop)
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f != nil {
		h.w.Flush()
		h.f.Close()
		h.f, h.w = nil, nil
	}
}
