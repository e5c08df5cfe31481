package delta

import (
	"container/list"
	"sync"
)

// budgetLRU is a least-recently-used cache bounded by the summed cost of
// its values (bytes, estimated by the caller) and by a count. An entry
// whose cost alone exceeds the budget is still kept, alone, so that the
// newest snapshot of a huge table is never rebuilt on every request. It is
// safe for concurrent use.
type budgetLRU[K comparable, V any] struct {
	mu     sync.Mutex
	budget int64 // bytes; guarded by mu (read-only after construction)
	count  int   // maximum number of entries
	used   int64 // guarded by mu
	ll     *list.List
	items  map[K]*list.Element
}

type budgetEntry[K comparable, V any] struct {
	key  K
	val  V
	cost int64
}

func newBudgetLRU[K comparable, V any](budget int64, count int) *budgetLRU[K, V] {
	return &budgetLRU[K, V]{budget: budget, count: count, ll: list.New(), items: map[K]*list.Element{}}
}

// Get returns the value of key and marks it recently used.
func (c *budgetLRU[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*budgetEntry[K, V]).val, true
	}
	var zero V
	return zero, false
}

// Peek returns the value of key without touching its recency.
func (c *budgetLRU[K, V]) Peek(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		return e.Value.(*budgetEntry[K, V]).val, true
	}
	var zero V
	return zero, false
}

// Add inserts or replaces key, then evicts the least recently used
// entries until the cache is within its budget and count.
func (c *budgetLRU[K, V]) Add(key K, val V, cost int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		be := e.Value.(*budgetEntry[K, V])
		c.used += cost - be.cost
		be.val, be.cost = val, cost
		c.ll.MoveToFront(e)
	} else {
		c.items[key] = c.ll.PushFront(&budgetEntry[K, V]{key: key, val: val, cost: cost})
		c.used += cost
	}
	c.evictLocked()
}

// evictLocked drops the least recently used entries until the cache is
// within its budget and count, keeping at least the newest one.
func (c *budgetLRU[K, V]) evictLocked() {
	for c.ll.Len() > 1 && (c.used > c.budget || c.ll.Len() > c.count) {
		c.removeLocked(c.ll.Back())
	}
}

// Remove drops key.
func (c *budgetLRU[K, V]) Remove(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.removeLocked(e)
	}
}

func (c *budgetLRU[K, V]) removeLocked(e *list.Element) {
	be := c.ll.Remove(e).(*budgetEntry[K, V])
	delete(c.items, be.key)
	c.used -= be.cost
}

// Keys returns the keys, most recently used first.
func (c *budgetLRU[K, V]) Keys() []K {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]K, 0, c.ll.Len())
	for e := c.ll.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*budgetEntry[K, V]).key)
	}
	return out
}

// Usage returns the summed cost and the number of entries.
func (c *budgetLRU[K, V]) Usage() (bytes int64, entries int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, c.ll.Len()
}

// Recost adds n to the cost of key when match accepts its value, then
// evicts as Add does.
func (c *budgetLRU[K, V]) Recost(key K, match func(V) bool, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok || !match(e.Value.(*budgetEntry[K, V]).val) {
		return
	}
	e.Value.(*budgetEntry[K, V]).cost += n
	c.used += n
	c.evictLocked()
}
