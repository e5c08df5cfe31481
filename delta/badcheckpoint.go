package delta

import (
	"sync"
	"time"
)

// badCheckpoints owns the marks of checkpoints that failed to read (corrupt,
// or parts gone), so that builds plan their segments from an older
// checkpoint instead of failing on the same one again.
//
// A mark is not forever: it expires after badCheckpointTTL, so that a
// checkpoint that failed for a passing reason (a part not yet visible on an
// eventually consistent listing, a writer still uploading sidecars) or that
// was rewritten is tried again, at the cost of one failed read per TTL.
// At most maxBadCheckpoints marks are kept (the oldest goes first): a log
// full of bad checkpoints costs a bounded map, not one entry per version
// ever seen.
type badCheckpoints struct {
	mu    sync.Mutex
	marks map[int64]time.Time // guarded by mu: checkpoint version -> when marked
	now   func() time.Time    // the clock; time.Now unless a test sets it
}

// badCheckpointTTL is how long a checkpoint stays marked bad.
const badCheckpointTTL = 10 * time.Minute

// maxBadCheckpoints bounds the marks kept.
const maxBadCheckpoints = 64

func (b *badCheckpoints) clock() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}

// mark records that the checkpoint of version v could not be read.
func (b *badCheckpoints) mark(v int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.marks == nil {
		b.marks = map[int64]time.Time{}
	}
	now := b.clock()
	b.expireLocked(now)
	if _, ok := b.marks[v]; !ok && len(b.marks) >= maxBadCheckpoints {
		oldest, at := int64(-1), now
		for cv, t := range b.marks {
			if t.Before(at) || oldest < 0 {
				oldest, at = cv, t
			}
		}
		delete(b.marks, oldest)
	}
	b.marks[v] = now
}

// live returns the versions marked bad now, as a set the caller owns (the
// segment planner reads it without a lock).
func (b *badCheckpoints) live() map[int64]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expireLocked(b.clock())
	out := make(map[int64]bool, len(b.marks))
	for v := range b.marks {
		out[v] = true
	}
	return out
}

// expireLocked drops the marks older than badCheckpointTTL.
func (b *badCheckpoints) expireLocked(now time.Time) {
	for v, at := range b.marks {
		if now.Sub(at) >= badCheckpointTTL {
			delete(b.marks, v)
		}
	}
}
