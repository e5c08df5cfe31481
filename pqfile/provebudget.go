package pqfile

import (
	"context"
	"sync"
)

// DefaultProveMemory is the memory all concurrent proofs (Prove) share
// unless the caller makes its own Budget: 256 MiB, room for pages of
// about 100 MiB (writers use 1 MiB pages).
const DefaultProveMemory = 256 << 20

// Budget is the memory that concurrent proofs of files share: a weighted
// semaphore of bytes, charged by the sizes page headers declare before
// any of those bytes is read or allocated. One proof never holds more
// than the whole limit; a page that would need more refuses its file.
//
// A proof holds the high-water mark of its own pages (its buffers are
// reused from page to page, so that is what it really holds). To grow
// without deadlock, a proof that cannot get the difference at once
// releases everything it holds, drops its buffers and waits for the
// whole amount: a waiter never holds bytes.
type Budget struct {
	limit int64
	mu    sync.Mutex
	used  int64         // guarded by mu
	wake  chan struct{} // guarded by mu; closed and replaced on every release
}

// NewBudget returns a Budget of limit bytes (DefaultProveMemory when
// limit <= 0).
func NewBudget(limit int64) *Budget {
	if limit <= 0 {
		limit = DefaultProveMemory
	}
	return &Budget{limit: limit, wake: make(chan struct{})}
}

// Limit is the budget's size in bytes.
func (b *Budget) Limit() int64 { return b.limit }

// InUse is how many bytes proofs hold now.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

var defaultBudget = NewBudget(DefaultProveMemory)

// tryAcquire takes n bytes if they are free now.
func (b *Budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// acquire takes n (<= limit) bytes, waiting for them.
func (b *Budget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.used+n <= b.limit {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *Budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}
