package mount

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRefresherBoundsConcurrency checks that one tick refreshes every
// table once, refreshWorkers at a time: not one at a time (a mount of
// many object-store tables took a LIST round trip per table per tick),
// not all at once.
func TestRefresherBoundsConcurrency(t *testing.T) {
	const tables = 10
	var running, peak atomic.Int64
	var calls [tables]atomic.Int64
	release := make(chan struct{})
	r := refresher{n: tables, workers: refreshWorkers, fn: func(ctx context.Context, i int) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		calls[i].Add(1)
		<-release
		running.Add(-1)
	}}
	ctx, cancel := context.WithCancel(context.Background())
	tick := make(chan time.Time)
	done := make(chan struct{})
	go func() { r.run(ctx, tick); close(done) }()
	tick <- time.Now()
	waitFor(t, "refreshWorkers refreshes at once", func() bool { return running.Load() == refreshWorkers })
	time.Sleep(50 * time.Millisecond) // room for a fifth to start, if it could
	if p := peak.Load(); p != refreshWorkers {
		t.Errorf("%d tables refreshed at once, want %d", p, refreshWorkers)
	}
	close(release)
	waitFor(t, "every table refreshed", func() bool {
		for i := range calls {
			if calls[i].Load() == 0 {
				return false
			}
		}
		return running.Load() == 0
	})
	for i := range calls {
		if n := calls[i].Load(); n != 1 {
			t.Errorf("table %d refreshed %d times for one tick", i, n)
		}
	}
	cancel()
	<-done
}

// TestRefresherStuckTableDoesNotDelayOthers checks that a table whose
// refresh hangs (a store that does not answer) holds one worker only:
// the other tables are refreshed on every tick, the stuck one is not
// queued again while it hangs, and cancelling ends the loop.
func TestRefresherStuckTableDoesNotDelayOthers(t *testing.T) {
	const tables = 3
	var calls [tables]atomic.Int64
	finished := make(chan int, 100)
	r := refresher{n: tables, workers: 2, fn: func(ctx context.Context, i int) {
		calls[i].Add(1)
		if i == 0 {
			<-ctx.Done() // stuck until the mount ends
			return
		}
		finished <- i
	}}
	ctx, cancel := context.WithCancel(context.Background())
	tick := make(chan time.Time)
	done := make(chan struct{})
	go func() { r.run(ctx, tick); close(done) }()
	// Tick until both tables that answer were refreshed 5 times (a tick
	// that comes while one is finishing skips it, as a real tick would).
	for deadline := time.Now().Add(10 * time.Second); calls[1].Load() < 5 || calls[2].Load() < 5; {
		if time.Now().After(deadline) {
			t.Fatalf("the tables that answer were not refreshed while table 0 hangs (calls %d %d %d)",
				calls[0].Load(), calls[1].Load(), calls[2].Load())
		}
		select {
		case tick <- time.Now():
		case <-time.After(time.Millisecond):
		}
		for len(finished) > 0 {
			<-finished
		}
	}
	if c0 := calls[0].Load(); c0 != 1 {
		t.Errorf("the stuck table was refreshed %d times, want 1 (it must not be queued again while it hangs)", c0)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the refresh loop did not end when cancelled")
	}
}

// TestForEachBounded checks the mount's first read of its tables: every
// table once, at most the bound at a time.
func TestForEachBounded(t *testing.T) {
	var mu sync.Mutex
	running, peak := 0, 0
	seen := make([]int, 20)
	forEachBounded(len(seen), 3, func(i int) {
		mu.Lock()
		running++
		peak = max(peak, running)
		seen[i]++
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
	})
	if peak < 2 || peak > 3 {
		t.Errorf("%d at once, want 2 or 3 (bound 3)", peak)
	}
	for i, n := range seen {
		if n != 1 {
			t.Errorf("table %d read %d times", i, n)
		}
	}
}
