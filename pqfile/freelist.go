package pqfile

import (
	"math/bits"
	"slices"
	"sync"
	"time"
)

// idleRelease is how long a free list keeps its values without any get or put: a mount that
// rewrote one large file does not hold the buffers for the rest of its life.
const idleRelease = 30 * time.Second

// idleClock calls release once no touch happened for its period (idleRelease when zero). Its
// zero value is ready.
type idleClock struct {
	period time.Duration
	last   time.Time   // guarded by the owner's mutex
	timer  *time.Timer // guarded by the owner's mutex; nil when not armed
}

func (c *idleClock) after() time.Duration {
	if c.period > 0 {
		return c.period
	}
	return idleRelease
}

// touch records a use and arms the timer; the owner's mutex must be held. release runs on the
// timer's goroutine and must take that mutex and call expired.
func (c *idleClock) touch(release func()) {
	c.last = time.Now()
	if c.timer == nil {
		c.timer = time.AfterFunc(c.after(), release)
	}
}

// expired reports, with the owner's mutex held, whether the list has been idle for its period;
// if not, it re-arms the timer for the rest of the time.
func (c *idleClock) expired() bool {
	if rest := c.after() - time.Since(c.last); rest > 0 {
		c.timer.Reset(rest)
		return false
	}
	c.timer = nil
	return true
}

// Free lists that, unlike sync.Pool (emptied by every garbage collection), keep a bounded amount
// of memory across collections. The page filter's buffers are large (a column chunk's output,
// pages), and a daemon with a small heap collects often: with sync.Pool nearly every buffer was
// new memory, zeroed and faulted in page by page, which cost as much as the filtering itself.

// bufList keeps released byte buffers for reuse, at most maxBufs of them and maxBytes of
// capacity in all. A buffer is handed to one caller at a time: get removes it from the list, and
// Put ignores a buffer already in it, so a buffer released twice before anyone took it is still
// handed out once. It is safe for concurrent use.
type bufList struct {
	maxBufs  int
	maxBytes int

	mu    sync.Mutex
	bufs  []*[]byte // guarded by mu
	bytes int       // capacity of bufs, guarded by mu
	idle  idleClock // guarded by mu
}

// releaseIdle drops every kept buffer once the list was unused for idleRelease.
func (l *bufList) releaseIdle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idle.expired() {
		for _, b := range l.bufs {
			unadviseHuge(*b)
		}
		clear(l.bufs)
		l.bufs, l.bytes = l.bufs[:0], 0
	}
}

// get returns an empty buffer of capacity at least n: the smallest kept one that is large
// enough but not more than twice, else a new one. The caller owns it until it calls Put.
func (l *bufList) get(n int) *[]byte {
	n = sizeClass(n)
	l.mu.Lock()
	l.idle.touch(l.releaseIdle)
	best := -1
	for i, b := range l.bufs {
		if c := cap(*b); c >= n && c/2 <= n && (best < 0 || c < cap(*l.bufs[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := l.bufs[best]
		l.bufs = slices.Delete(l.bufs, best, best+1)
		l.bytes -= cap(*b)
		l.mu.Unlock()
		*b = (*b)[:0]
		return b
	}
	l.mu.Unlock()
	// Advised for huge pages (newBuf), and the advice taken back when the list lets the buffer
	// go (unadviseHuge). A buffer its holder drops instead of handing back (an error path, an
	// append that outgrew it) keeps the advice: rare, and each is one buffer's range.
	b := newBuf(n)
	return &b
}

// sizeClass returns n rounded up to a multiple of the power of two at most an eighth of it, so
// that buffers asked for similar sizes (the chunks of the row groups of a file) serve each other.
func sizeClass(n int) int {
	if n <= 4096 {
		return n
	}
	g := 1 << (bits.Len(uint(n)) - 4)
	return (n + g - 1) &^ (g - 1)
}

// Put hands b back for reuse; the caller must not use it afterwards. The list keeps the buffers
// released last: older ones that would take it over its bounds are left to the garbage collector,
// and so is a buffer larger than maxBytes, a nil or an empty one.
func (l *bufList) Put(b *[]byte) {
	if b == nil || cap(*b) == 0 {
		return
	}
	if cap(*b) > l.maxBytes {
		unadviseHuge(*b)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.idle.touch(l.releaseIdle)
	if slices.Contains(l.bufs, b) {
		return
	}
	drop := 0
	for drop < len(l.bufs) && (len(l.bufs)-drop >= l.maxBufs || l.bytes+cap(*b) > l.maxBytes) {
		l.bytes -= cap(*l.bufs[drop])
		unadviseHuge(*l.bufs[drop])
		drop++
	}
	l.bufs = append(slices.Delete(l.bufs, 0, drop), b)
	l.bytes += cap(*b)
}

// freeList keeps up to max released values for reuse. Like bufList, it hands a value to one
// caller at a time and ignores a value already in it. It is safe for concurrent use.
type freeList[T comparable] struct {
	max int

	mu    sync.Mutex
	items []T       // guarded by mu
	idle  idleClock // guarded by mu
}

// releaseIdle drops every kept value once the list was unused for idleRelease.
func (l *freeList[T]) releaseIdle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idle.expired() {
		clear(l.items)
		l.items = l.items[:0]
	}
}

// get returns a kept value, or the zero value and false when there is none.
func (l *freeList[T]) get() (T, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.idle.touch(l.releaseIdle)
	var zero T
	if len(l.items) == 0 {
		return zero, false
	}
	x := l.items[len(l.items)-1]
	l.items[len(l.items)-1] = zero
	l.items = l.items[:len(l.items)-1]
	return x, true
}

// put hands x back for reuse unless the list is full; the caller must not use x afterwards.
func (l *freeList[T]) put(x T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.idle.touch(l.releaseIdle)
	if len(l.items) < l.max && !slices.Contains(l.items, x) {
		l.items = append(l.items, x)
	}
}
