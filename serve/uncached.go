package serve

// Patches held in memory while the disk cache is full, under one budget
// per mount.

import (
	"bytes"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/deltafs/deltafs/pqfile"
)

// When the disk cache cannot take a rewritten file's patch (its bytes are
// held by files readers keep open, and it never grows past --cache-size),
// the patch is built in memory for this open alone and served from there,
// within a budget for the whole mount (Caches); one that does not fit fails the
// open, saying so, rather than growing the disk or the heap unbounded.

// uncachedPatchBytes bounds the patches held in memory at once because
// the disk cache was full, for the whole mount.
const uncachedPatchBytes = 256 << 20

// uncachedBudget is what uncached patches hold now, against its limit.
type uncachedBudget struct {
	held  atomic.Int64
	limit int64
}

// take charges n bytes to the budget, or reports that they do not fit.
func (u *uncachedBudget) take(n int64) bool {
	if u.held.Add(n) > u.limit {
		u.held.Add(-n)
		return false
	}
	return true
}

// give returns n bytes to the budget.
func (u *uncachedBudget) give(n int64) { u.held.Add(-n) }

// uncachedEntry builds the entry in memory, charged to the budget until
// its patch is closed. full is why the disk cache could not take it.
func (t *Table) uncachedEntry(srcSize int64, build func(io.Writer) error, full error) (*pqfile.Layout, patchReader, error) {
	budget := &t.caches.uncached
	w := &budgetBuffer{budget: budget}
	if err := build(w); err != nil {
		budget.give(w.held)
		if w.over {
			return nil, nil, fmt.Errorf("%w; the patch passes the %d MiB kept in memory instead (raise --cache-size, or close files)", full, budget.limit>>20)
		}
		return nil, nil, err
	}
	b := w.buf.Bytes()
	l, err := pqfile.ReadEntry(bytes.NewReader(b), int64(len(b)), srcSize)
	if err != nil {
		budget.give(w.held)
		return nil, nil, err
	}
	t.log.Debug("deltafs: disk cache full: a rewritten file's patch served from memory", "table", t.name, "bytes", len(b), "reason", full)
	return l, &heldPatch{Reader: bytes.NewReader(b), budget: budget, held: w.held}, nil
}

// budgetBuffer is a bytes.Buffer charged to the uncached budget as it grows.
type budgetBuffer struct {
	budget *uncachedBudget
	buf    bytes.Buffer
	held   int64
	over   bool // a write did not fit the budget
}

func (b *budgetBuffer) Write(p []byte) (int, error) {
	if !b.budget.take(int64(len(p))) {
		b.over = true
		return 0, fmt.Errorf("uncached patch: memory budget of %d bytes reached", b.budget.limit)
	}
	b.held += int64(len(p))
	return b.buf.Write(p)
}

// heldPatch is an uncached patch; Close gives its bytes back to the budget.
type heldPatch struct {
	*bytes.Reader
	budget *uncachedBudget
	held   int64
	closed atomic.Bool
}

func (p *heldPatch) Close() error {
	if p.closed.CompareAndSwap(false, true) {
		p.budget.give(p.held)
	}
	return nil
}
