package delta

import (
	"context"
	"sync"
)

// flightGroup coalesces concurrent builds of one version: the first caller
// builds, the others wait for its result. A build that failed because its
// caller's context ended is abandoned: a waiter whose own context is live
// then builds the version itself, so one interrupted reader never fails
// the others. The zero value is ready to use.
type flightGroup struct {
	mu      sync.Mutex
	flights map[int64]*flight // guarded by mu: builds in progress
}

// flight is one build in progress. snap, err and abandoned are set before
// done is closed.
type flight struct {
	done      chan struct{}
	snap      *Snapshot
	err       error
	abandoned bool // the build failed because its caller's context ended
	waiters   int  // guarded by flightGroup.mu: callers that joined it
}

// do returns build's result for version v, sharing one call of build
// among the callers that ask for v while it runs.
func (g *flightGroup) do(ctx context.Context, v int64, build func() (*Snapshot, error)) (*Snapshot, error) {
	for {
		g.mu.Lock()
		if f, ok := g.flights[v]; ok {
			f.waiters++
			g.mu.Unlock()
			select {
			case <-f.done:
				if f.abandoned {
					continue
				}
				return f.snap, f.err
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		f := &flight{done: make(chan struct{})}
		if g.flights == nil {
			g.flights = map[int64]*flight{}
		}
		g.flights[v] = f
		g.mu.Unlock()

		f.snap, f.err = build()
		f.abandoned = f.err != nil && ctx.Err() != nil
		g.mu.Lock()
		delete(g.flights, v)
		g.mu.Unlock()
		close(f.done)
		return f.snap, f.err
	}
}

// waiters returns how many callers joined the build of v in progress.
func (g *flightGroup) waiters(v int64) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f, ok := g.flights[v]; ok {
		return f.waiters
	}
	return 0
}
