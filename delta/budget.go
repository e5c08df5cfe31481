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
	// deps lists, per key, the entries sharing its bytes (AddShared);
	// guarded by mu. Entries gone since are skipped when it is used.
	deps map[K][]K
}

type budgetEntry[K comparable, V any] struct {
	key  K
	val  V
	cost int64
	// base is the entry whose bytes this one shares, and shared how many
	// of them its cost leaves out, while base is cached (AddShared).
	base   K
	shared int64
}

func newBudgetLRU[K comparable, V any](budget int64, count int) *budgetLRU[K, V] {
	return &budgetLRU[K, V]{budget: budget, count: count, ll: list.New(), items: map[K]*list.Element{}, deps: map[K][]K{}}
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

// AddShared is Add for a value that shares shared bytes with the cached
// entry base (a snapshot built on a cached state holds the state's
// actions): its cost leaves them out while base is cached, and they are
// added to it when base goes, so that what the entries hold is always
// charged to one of them. Without base cached it is Add of the full cost.
func (c *budgetLRU[K, V]) AddShared(key K, val V, cost int64, base K, shared int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[base]; !ok || base == key {
		shared = 0
	}
	cost -= shared
	if e, ok := c.items[key]; ok {
		be := e.Value.(*budgetEntry[K, V])
		c.used += cost - be.cost
		be.val, be.cost, be.base, be.shared = val, cost, base, shared
		c.ll.MoveToFront(e)
	} else {
		c.items[key] = c.ll.PushFront(&budgetEntry[K, V]{key: key, val: val, cost: cost, base: base, shared: shared})
		c.used += cost
	}
	if shared > 0 {
		c.deps[base] = append(c.deps[base], key)
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

// removeLocked drops e and charges the entries that shared its bytes
// with what they now hold alone.
func (c *budgetLRU[K, V]) removeLocked(e *list.Element) {
	be := c.ll.Remove(e).(*budgetEntry[K, V])
	delete(c.items, be.key)
	c.used -= be.cost
	for _, k := range c.deps[be.key] {
		if de, ok := c.items[k]; ok {
			d := de.Value.(*budgetEntry[K, V])
			if d.shared > 0 && d.base == be.key {
				d.cost += d.shared
				c.used += d.shared
				d.shared = 0
			}
		}
	}
	delete(c.deps, be.key)
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
