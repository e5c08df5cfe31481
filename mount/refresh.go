package mount

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// refreshWorkers bounds the tables refreshed at once: a mount of many
// tables on an object store asks them in parallel (one LIST each), and a
// slow or stuck table holds one worker, not the others.
const refreshWorkers = 4

// refresher runs fn for every table on each tick, at most workers at a
// time and at most once at a time per table: a table still refreshing
// when the next tick comes is skipped for that tick (it is not queued
// twice), so a stuck table does not delay the others' next refresh.
type refresher struct {
	n       int
	workers int
	fn      func(ctx context.Context, table int)
}

// run refreshes until ctx is done, then waits for the refreshes under
// way (fn gets ctx, so they end) and returns.
func (r refresher) run(ctx context.Context, tick <-chan time.Time) {
	work := make(chan int, r.n) // each table at most once in it (busy)
	busy := make([]atomic.Bool, r.n)
	var wg sync.WaitGroup
	for range min(r.workers, r.n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case i := <-work:
					r.fn(ctx, i)
					busy[i].Store(false)
				}
			}
		}()
	}
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		for i := range r.n {
			if busy[i].CompareAndSwap(false, true) {
				work <- i
			}
		}
	}
}

// forEachBounded calls fn(i) for i in [0, n), at most workers at a time,
// and returns when all have returned.
func forEachBounded(n, workers int, fn func(i int)) {
	sem := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}
