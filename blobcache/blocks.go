package blobcache

import (
	"errors"
	"math"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// objectID identifies an immutable object across Sources.
type objectID struct {
	key     string
	size    int64
	version string
}

// blockKey names block index of an object: bytes
// [index*BlockSize, min((index+1)*BlockSize, size)).
type blockKey struct {
	obj   objectID
	index int64
}

// errAbandoned is the result of a fetch whose leader gave up (its context
// was cancelled, or it was background work): waiters retry and one of them
// becomes the new leader.
var errAbandoned = errors.New("blobcache: fetch abandoned by its leader")

// call is one fetch of one block in progress. The fetching goroutine (the
// leader) sets data or err and then closes done; waiters read them only
// after done is closed.
type call struct {
	done chan struct{}
	data []byte
	err  error
}

// run is a range of consecutive blocks claimed by one goroutine, to be
// fetched with one ranged read. calls[i] is the call of block first+i.
type run struct {
	first, last int64
	calls       []*call
}

// blockTable holds cached blocks and the fetches in flight. Every block in
// the LRU is complete and correct; a block is never in the LRU and in
// flight at once.
type blockTable struct {
	limit int64
	stats *counters

	mu       sync.Mutex
	lru      *simplelru.LRU[blockKey, []byte] // guarded by mu
	bytes    int64                            // guarded by mu: sum of block lengths in lru
	inflight map[blockKey]*call               // guarded by mu
}

func newBlockTable(limit int64, stats *counters) (*blockTable, error) {
	t := &blockTable{limit: limit, stats: stats, inflight: make(map[blockKey]*call)}
	// The LRU is bounded by bytes in add, not by entry count.
	lru, err := simplelru.NewLRU(math.MaxInt32, t.onEvictLocked)
	if err != nil {
		return nil, err
	}
	t.lru = lru
	return t, nil
}

func (t *blockTable) onEvictLocked(_ blockKey, data []byte) {
	t.bytes -= int64(len(data))
	t.stats.memoryBytes.Add(-int64(len(data)))
	t.stats.evictions.Add(1)
}

// claim looks up blocks first..last of id. Blocks in memory are stored in
// got (when got is not nil; got[i] is block first+i and blocks already in got
// are skipped). Blocks nobody is fetching are claimed: they are returned as
// runs the caller must fetch and then finish. With got set, the calls of
// blocks others are fetching are returned in waits, keyed by block index.
func (t *blockTable) claim(id objectID, first, last int64, got [][]byte) (runs []run, waits map[int64]*call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := first; i <= last; i++ {
		k := blockKey{id, i}
		if got != nil {
			if got[i-first] != nil {
				continue
			}
			if data, ok := t.lru.Get(k); ok {
				got[i-first] = data
				t.stats.hits.Add(1)
				continue
			}
			t.stats.misses.Add(1)
		} else if t.lru.Contains(k) {
			continue
		}
		if cl, ok := t.inflight[k]; ok {
			if got != nil {
				if waits == nil {
					waits = make(map[int64]*call)
				}
				waits[i] = cl
			}
			continue
		}
		cl := &call{done: make(chan struct{})}
		t.inflight[k] = cl
		if n := len(runs); n > 0 && runs[n-1].last == i-1 {
			runs[n-1].last = i
			runs[n-1].calls = append(runs[n-1].calls, cl)
		} else {
			runs = append(runs, run{first: i, last: i, calls: []*call{cl}})
		}
	}
	return runs, waits
}

// complete publishes a fetched block: it enters the LRU (the least
// recently used blocks evicted first to make room, so that the bytes held,
// which Stats reads without the lock, never pass the limit) and its
// waiters wake up.
func (t *blockTable) complete(k blockKey, cl *call, data []byte) {
	t.mu.Lock()
	delete(t.inflight, k)
	if !t.lru.Contains(k) {
		for t.bytes+int64(len(data)) > t.limit && t.lru.Len() > 0 {
			t.lru.RemoveOldest()
		}
		t.lru.Add(k, data)
		t.bytes += int64(len(data))
		t.stats.memoryBytes.Add(int64(len(data)))
		for t.bytes > t.limit { // a block larger than the whole limit
			t.lru.RemoveOldest()
		}
	}
	t.mu.Unlock()
	cl.data = data
	close(cl.done)
}

// fail ends the calls of blocks from..from+len(calls)-1 of id without
// caching anything; waiters see err.
func (t *blockTable) fail(id objectID, from int64, calls []*call, err error) {
	t.mu.Lock()
	for i := range calls {
		delete(t.inflight, blockKey{id, from + int64(i)})
	}
	t.mu.Unlock()
	for _, cl := range calls {
		cl.err = err
		close(cl.done)
	}
}
