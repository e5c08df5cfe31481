package nfsfront

import (
	"os"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
)

// listings keeps directory listings for the READDIR pages that follow
// the first, by path and verifier: bounded in number and in entries
// (about 150 bytes each); the newest is kept whatever its size, for its
// own pages.
type listings struct {
	mu     sync.Mutex
	lru    *lru.Cache[listingKey, []os.FileInfo] // guarded by mu
	listed int                                   // guarded by mu: entries held
}

type listingKey struct {
	path     string
	verifier uint64
}

const (
	maxListings = 64
	maxListed   = 1 << 18
)

func newListings() *listings {
	l := &listings{}
	l.lru, _ = lru.NewWithEvict(maxListings, func(_ listingKey, v []os.FileInfo) { l.listed -= len(v) })
	return l
}

func (l *listings) get(p string, v uint64) ([]os.FileInfo, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lru.Get(listingKey{p, v})
}

func (l *listings) add(p string, v uint64, entries []os.FileInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := listingKey{p, v}
	l.lru.Remove(k)
	l.lru.Add(k, entries)
	l.listed += len(entries)
	for l.listed > maxListed && l.lru.Len() > 1 {
		l.lru.RemoveOldest()
	}
}
