package serve

// Caches: what one mount's data file servers keep in memory (verdicts,
// footer patches, copies' bookkeeping, shapes), under stated budgets,
// freed when the mount closes.

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/deltafs/deltafs/pqfile"
)

// Caches is what the Tables of one mount keep in memory beside the block
// cache and the snapshot cache, each part under a budget stated per unit
// (docs/operations.md, "Memory budgets"):
//
//   - verdicts: how each stored file is served (as stored, or rewritten
//     and its size), at most verdictBytes an entry and maxVerdicts entries;
//   - footer-only patches (memPatches): their bytes plus 64 per layout
//     segment and 128 each, at most memPatchBytes;
//   - copies (copyState): opens counted and copies checked, a 128-bit hash
//     of the rewrite's key each, at most copyEntryBytes an entry and
//     copyOpensKept and maxTrusted entries;
//   - shapes of recent schemas, at most maxShapes, and the footer verdicts
//     by encoded schema (pqfile.ShapeMemo), at most schemaMemoBytes;
//   - patches built in memory while the disk cache is full, at most
//     uncachedPatchBytes, held only while a file is open.
//
// A mount makes one Caches for its tables (Options.Caches) and closes it
// after them; two mounts in one process share nothing. Close frees what it
// holds. It is safe for concurrent use.
type Caches struct {
	copies   *copyState
	patches  *memPatches
	verdicts *verdictCache
	shapes   *shapeCache
	schemas  atomic.Pointer[pqfile.ShapeMemo]
	uncached uncachedBudget
}

// schemaMemoBytes bounds a mount's memo of footer verdicts by encoded
// schema: a few hundred bytes per distinct schema, so thousands of schemas.
const schemaMemoBytes = 4 << 20

// NewCaches returns the empty caches of a mount, with the stated budgets.
func NewCaches() *Caches {
	c := &Caches{copies: newCopyState(), patches: newMemPatches(memPatchBytes),
		verdicts: newVerdictCache(maxVerdicts), shapes: newShapeCache(maxShapes)}
	c.schemas.Store(pqfile.NewShapeMemo(schemaMemoBytes))
	c.uncached.limit = uncachedPatchBytes
	return c
}

// Close frees what the caches hold. The mount closes them once its Tables
// are closed; a use after Close finds them empty and fills them again.
func (c *Caches) Close() {
	c.copies.clear()
	c.patches.clear()
	c.verdicts.clear()
	c.shapes.clear()
	c.schemas.Store(pqfile.NewShapeMemo(schemaMemoBytes))
}

// CacheUsage is what a Caches holds now.
type CacheUsage struct {
	Verdicts     int   `json:"verdicts"`     // stored files' verdicts kept
	PatchBytes   int64 `json:"patchBytes"`   // estimated bytes of footer-only patches kept
	Patches      int   `json:"patches"`      // footer-only patches kept
	CopyEntries  int   `json:"copyEntries"`  // files whose opens are counted or whose copy is checked
	Shapes       int   `json:"shapes"`       // schema shapes kept
	UncachedHeld int64 `json:"uncachedHeld"` // bytes of patches held in memory while the disk cache is full
}

// Usage reports what the caches hold now.
func (c *Caches) Usage() CacheUsage {
	u := CacheUsage{Verdicts: c.verdicts.len(), CopyEntries: c.copies.len(), Shapes: c.shapes.len(), UncachedHeld: c.uncached.held.Load()}
	u.PatchBytes, u.Patches = c.patches.usage()
	return u
}

// shapeCache holds the shapes of recent schemas: every snapshot of a
// table with one schema shares one, and building one walks the whole
// schema.
type shapeCache struct {
	mu  sync.Mutex
	m   map[shapeKey]*snapShape // guarded by mu; cleared when full
	max int
}

func newShapeCache(n int) *shapeCache { return &shapeCache{m: map[shapeKey]*snapShape{}, max: n} }

func (s *shapeCache) get(k shapeKey) *snapShape {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k]
}

func (s *shapeCache) put(k shapeKey, v *snapShape) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.max {
		clear(s.m)
	}
	s.m[k] = v
}

func (s *shapeCache) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m = map[shapeKey]*snapShape{}
}

func (s *shapeCache) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// keySeeds make the 128-bit hashes that stand for long cache keys in
// memory (verdictKey, copyID). They are process-wide on purpose: two
// random numbers, no data of any table, and a hash never leaves the
// process (what is written to disk uses stableVerdictKey).
var keySeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// hashID is a 128-bit hash of a key, for maps that must not keep the
// key's bytes.
type hashID struct{ a, b uint64 }

// hashOf returns the hashID of s.
func hashOf(s string) hashID {
	return hashID{maphash.String(keySeeds[0], s), maphash.String(keySeeds[1], s)}
}
