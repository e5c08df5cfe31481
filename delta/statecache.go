package delta

// The state cache holds, under one byte budget, the snapshots built and the
// bare table states a build can start from: decoded checkpoints and the
// intermediate states a long replay keeps every stateInterval commits.
// States are immutable and the state of version v is the same whichever
// way it was reached, so any cached state at or before v (and not before
// v's checkpoint) is a valid base for v.
//
// Cost accounting: a state's cost is its pointer slices plus the estimated
// bytes of its actions. A snapshot built on a base that is itself still
// cached shares the base's actions, so it is charged its pointers and the
// actions it added while the base is cached, and the shared actions too
// once the base is evicted (budgetLRU.AddShared): what the cache holds is
// always charged to some entry. Touching the snapshot touches its base,
// so that the base is not evicted from under a snapshot in use.

// stateOverhead is what a cached state or snapshot costs whatever its
// size (the structs, maps of txns and domains, the commitInfo kept), and
// logFileBytes what each log file its segment names costs: measured, 300
// snapshots of 150 files held ~38 KB each, which the per-file estimates
// alone put at ~7 KB.
const (
	stateOverhead = 16 << 10
	logFileBytes  = 160
)

// stateKey names a cache entry: a snapshot, or a bare state, of a version
// of a table (caches are shared by a mount's tables).
type stateKey struct {
	t       *Table
	version int64
	snap    bool
}

// commitKey names a parsed commit of a table.
type commitKey struct {
	t       *Table
	version int64
}

// noBase is the base of a state replayed onto nothing.
var noBase = stateKey{version: -1}

// cachedState is a snapshot (snap set) or a bare state.
type cachedState struct {
	snap  *Snapshot
	state *tableState
	base  stateKey // the entry this one was replayed onto; version -1: none
}

func (c *cachedState) tableState() *tableState {
	if c.snap != nil {
		return c.snap.state
	}
	return c.state
}

// cachedSnapshot returns the cached snapshot of version v.
func (t *Table) cachedSnapshot(v int64) (*Snapshot, bool) {
	c, ok := t.states.Get(stateKey{t, v, true})
	if !ok {
		return nil, false
	}
	if c.base.version >= 0 {
		t.states.Get(c.base) // keep the shared base as recent as its user
	}
	return c.snap, true
}

// cacheSnapshot adds a built snapshot, charged as described above.
func (t *Table) cacheSnapshot(s *Snapshot) {
	t.cacheEntry(stateKey{t, s.version, true}, &cachedState{snap: s, base: s.base})
}

// cacheState adds a bare state of version v replayed onto base.
func (t *Table) cacheState(v int64, st *tableState, base stateKey) {
	t.cacheEntry(stateKey{t, v, false}, &cachedState{state: st, base: base})
}

func (t *Table) cacheEntry(k stateKey, c *cachedState) {
	st := c.tableState()
	cost := pointerBytes(st) + st.bytes + stateOverhead
	if c.snap != nil && c.snap.segment != nil {
		cost += logFileBytes * int64(len(c.snap.segment.Commits)+len(c.snap.segment.Checkpoint))
	}
	var shared int64
	if c.base.version >= 0 {
		if b, ok := t.states.Peek(c.base); ok {
			shared = min(b.tableState().bytes, st.bytes)
		}
	}
	t.states.AddShared(k, c, cost, c.base, shared)
}

// nearestState returns the cached state (of a snapshot or bare) with the
// highest version in [lo, hi], and its key; ok is false when there is none.
func (t *Table) nearestState(lo, hi int64) (*tableState, stateKey, bool) {
	best := noBase
	for _, k := range t.states.Keys() {
		if k.t == t && k.version >= lo && k.version <= hi && (k.version > best.version || k.version == best.version && k.snap) {
			best = k
		}
	}
	if best.version < 0 {
		return nil, best, false
	}
	c, ok := t.states.Get(best)
	if !ok {
		return nil, best, false
	}
	return c.tableState(), best, true
}

// charge adds n bytes to the cost of snapshot s when it is the cached
// snapshot of its version.
func (t *Table) charge(s *Snapshot, n int64) {
	t.states.Recost(stateKey{t, s.version, true}, func(c *cachedState) bool { return c.snap == s }, n)
}
