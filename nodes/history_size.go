package nodes

import (
	"context"
	"sync"
)

// historySize is the byte size of _history.jsonl for versions 0..upto,
// so that a stat reports the true size (readers such as DuckDB read a
// file by its size). It is computed once and extended as @latest moves:
// only the lines of the new versions are produced, counted and dropped,
// so it costs a few words whatever the length of the log.
//
// The history is append-only: the lines of 0..N are a prefix of those of
// 0..M for M > N, both produced by the engine from its listing of the log
// (which, once read, only grows), so the size of 0..N plus that of the
// lines of N+1..M is the size of 0..M, and a handle opened for 0..N may
// go on to M (historyHandle).
type historySize struct {
	// sem lets one computation run at a time (a burst of stats after a
	// commit counts once); waiters can leave when their request is
	// cancelled, so no lock is held across reads of the log.
	sem chan struct{}

	mu    sync.Mutex
	known bool  // guarded by mu: upto and bytes are set
	upto  int64 // guarded by mu: the newest version counted
	bytes int64 // guarded by mu: the size of the lines of 0..upto
}

func newHistorySize() historySize { return historySize{sem: make(chan struct{}, 1)} }

// cached returns the size of 0..to if it is known.
func (h *historySize) cached(to int64) (int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bytes, h.known && h.upto == to
}

// size returns the byte size of the lines of versions 0..to of t.
func (h *historySize) size(ctx context.Context, t Table, to int64) (int64, error) {
	if n, ok := h.cached(to); ok {
		return n, nil
	}
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-h.sem }()
	h.mu.Lock()
	known, upto, n := h.known, h.upto, h.bytes
	h.mu.Unlock()
	if known && upto == to {
		return n, nil
	}
	if !known || to < upto {
		upto, n = -1, 0
	}
	add, err := countHistory(ctx, t, upto+1, to)
	if err != nil {
		return 0, err
	}
	h.mu.Lock()
	h.known, h.upto, h.bytes = true, to, n+add
	h.mu.Unlock()
	return n + add, nil
}

// countHistory returns the byte size of the lines of versions from..to,
// holding none of them (the engine keeps what it learnt of them).
func countHistory(ctx context.Context, t Table, from, to int64) (int64, error) {
	if to < from {
		return 0, nil
	}
	return t.HistorySize(ctx, from, to)
}
