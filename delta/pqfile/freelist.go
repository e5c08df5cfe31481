package pqfile

import (
	"math/bits"
	"slices"
	"sync"
)

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
}

// get returns an empty buffer of capacity at least n: the smallest kept one that is large
// enough but not more than twice, else a new one. The caller owns it until it calls Put.
func (l *bufList) get(n int) *[]byte {
	n = sizeClass(n)
	l.mu.Lock()
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
	b := make([]byte, 0, n)
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
	if b == nil || cap(*b) == 0 || cap(*b) > l.maxBytes {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if slices.Contains(l.bufs, b) {
		return
	}
	drop := 0
	for drop < len(l.bufs) && (len(l.bufs)-drop >= l.maxBufs || l.bytes+cap(*b) > l.maxBytes) {
		l.bytes -= cap(*l.bufs[drop])
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
	items []T // guarded by mu
}

// get returns a kept value, or the zero value and false when there is none.
func (l *freeList[T]) get() (T, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
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
	if len(l.items) < l.max && !slices.Contains(l.items, x) {
		l.items = append(l.items, x)
	}
}
