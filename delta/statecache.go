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

// Options tunes a Table's caches. Zero values take the defaults.
type Options struct {
	// Caches is the memory the table's snapshots, states and parsed
	// commits live in, shared with the other tables given the same Caches
	// (a mount's). Nil: a Caches of the table's own, of StateBytes.
	Caches *Caches
	// StateBytes is the budget of the table's own Caches when Caches is
	// nil (default DefaultStateBytes).
	StateBytes int64
}

// DefaultStateBytes is the default budget of a Caches.
const DefaultStateBytes = 512 << 20

// Caches holds, under byte budgets, what the Tables sharing it keep in
// memory: built snapshots and bare table states (decoded checkpoints,
// intermediate states of long replays) under one budget, parsed commit
// files under an eighth of it. Costs are estimates (see memsize.go). It is
// safe for concurrent use.
type Caches struct {
	budget  int64
	states  *budgetLRU[stateKey, *cachedState]
	commits *budgetLRU[commitKey, *commitFile]
}

// maxStates bounds the number of snapshots and states kept, whatever
// their size: builds scan the keys for the nearest state.
const maxStates = 256

// NewCaches returns Caches with a budget of stateBytes (<= 0: the default)
// for snapshots and states, and an eighth of it for parsed commits.
func NewCaches(stateBytes int64) *Caches {
	if stateBytes <= 0 {
		stateBytes = DefaultStateBytes
	}
	return &Caches{
		budget:  stateBytes,
		states:  newBudgetLRU[stateKey, *cachedState](stateBytes, maxStates),
		commits: newBudgetLRU[commitKey, *commitFile](stateBytes/8, 1<<20),
	}
}

// CacheUsage is what a Caches holds.
type CacheUsage struct {
	Budget      int64 `json:"budgetBytes"` // for snapshots and states
	StateBytes  int64 `json:"stateBytes"`  // estimated bytes of snapshots and states
	States      int   `json:"states"`      // snapshots and states kept
	CommitBytes int64 `json:"commitBytes"` // estimated bytes of parsed commits
	Commits     int   `json:"commits"`     // parsed commits kept
}

// Usage reports what the caches hold now.
func (c *Caches) Usage() CacheUsage {
	u := CacheUsage{Budget: c.budget}
	u.StateBytes, u.States = c.states.Usage()
	u.CommitBytes, u.Commits = c.commits.Usage()
	return u
}

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

// stateCache is one table's part of the shared state cache (Caches): the
// snapshots and states of its versions, keyed with the table.
type stateCache struct {
	lru   *budgetLRU[stateKey, *cachedState]
	owner *Table
}

// snapshot returns the cached snapshot of version v.
func (c stateCache) snapshot(v int64) (*Snapshot, bool) {
	e, ok := c.lru.Get(stateKey{c.owner, v, true})
	if !ok {
		return nil, false
	}
	if e.base.version >= 0 {
		c.lru.Get(e.base) // keep the shared base as recent as its user
	}
	return e.snap, true
}

// addSnapshot adds a built snapshot, charged as described above.
func (c stateCache) addSnapshot(s *Snapshot) {
	c.add(stateKey{c.owner, s.version, true}, &cachedState{snap: s, base: s.base})
}

// addState adds a bare state of version v replayed onto base, and returns
// its key.
func (c stateCache) addState(v int64, st *tableState, base stateKey) stateKey {
	k := stateKey{c.owner, v, false}
	c.add(k, &cachedState{state: st, base: base})
	return k
}

func (c stateCache) add(k stateKey, e *cachedState) {
	st := e.tableState()
	cost := pointerBytes(st) + st.bytes + stateOverhead
	if e.snap != nil && e.snap.segment != nil {
		cost += logFileBytes * int64(len(e.snap.segment.Commits)+len(e.snap.segment.Checkpoint))
	}
	var shared int64
	if e.base.version >= 0 {
		if b, ok := c.lru.Peek(e.base); ok {
			shared = min(b.tableState().bytes, st.bytes)
		}
	}
	c.lru.AddShared(k, e, cost, e.base, shared)
}

// nearest returns the cached state (of a snapshot or bare) with the
// highest version in [lo, hi], and its key; ok is false when there is none.
func (c stateCache) nearest(lo, hi int64) (*tableState, stateKey, bool) {
	best := noBase
	for _, k := range c.lru.Keys() {
		if k.t == c.owner && k.version >= lo && k.version <= hi && (k.version > best.version || k.version == best.version && k.snap) {
			best = k
		}
	}
	if best.version < 0 {
		return nil, best, false
	}
	e, ok := c.lru.Get(best)
	if !ok {
		return nil, best, false
	}
	return e.tableState(), best, true
}

// charge adds n bytes to the cost of snapshot s when it is the cached
// snapshot of its version (a lazily built index of it).
func (c stateCache) charge(s *Snapshot, n int64) {
	c.lru.Recost(stateKey{c.owner, s.version, true}, func(e *cachedState) bool { return e.snap == s }, n)
}
