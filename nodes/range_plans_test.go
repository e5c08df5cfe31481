package nodes

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/serve"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// Concurrent requests for one range's plan make it once; a build under
// way for one range holds up no other range (no lock is held across it);
// a waiter whose leader was interrupted builds the plan itself instead of
// failing with the leader's cancellation.
func TestRangePlansCoalesceWithoutALock(t *testing.T) {
	p := newRangePlans(1 << 20)
	a, b := planKey{from: 1, to: 2}, planKey{from: 3, to: 4}
	release := make(chan struct{})
	var builds atomic.Int32
	slow := func(ctx context.Context) (*rangePlan, error) {
		builds.Add(1)
		select {
		case <-release:
			return &rangePlan{cost: 100}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var wg sync.WaitGroup
	plans := make([]*rangePlan, 8)
	for i := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			plans[i], _ = p.get(context.Background(), a, slow)
		}()
	}
	for builds.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	other, err := p.get(context.Background(), b, func(context.Context) (*rangePlan, error) { return &rangePlan{cost: 1}, nil })
	if err != nil || other == nil {
		t.Fatalf("another range while one builds: %v, %v", other, err)
	}
	close(release)
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Errorf("%d builds of one range for 8 concurrent requests, want 1", n)
	}
	for i := range plans {
		if plans[i] == nil || plans[i] != plans[0] {
			t.Fatalf("request %d got plan %p, the first %p", i, plans[i], plans[0])
		}
	}

	// The leader interrupted: the waiter takes the build over.
	c := planKey{from: 5, to: 6}
	builds.Store(0)
	release = make(chan struct{})
	lctx, cancel := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() {
		_, err := p.get(lctx, c, slow)
		leaderErr <- err
	}()
	for builds.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	waiter := make(chan error, 1)
	go func() {
		plan, err := p.get(context.Background(), c, slow)
		if err == nil && plan == nil {
			t.Error("the waiter got no plan and no error")
		}
		waiter <- err
	}()
	time.Sleep(20 * time.Millisecond) // the waiter waits on the leader
	cancel()
	if err := <-leaderErr; !Cancelled(err) {
		t.Fatalf("the interrupted leader: %v, want its cancellation", err)
	}
	for builds.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := <-waiter; err != nil {
		t.Fatalf("the waiter of an interrupted leader failed: %v", err)
	}
}

// Plans are kept within the budget, least recently used first out (the
// newest alone may pass it), and a plan evicted is built again when asked.
func TestRangePlansStayInBudget(t *testing.T) {
	p := newRangePlans(1000)
	builds := map[int64]int{}
	get := func(v int64) {
		t.Helper()
		_, err := p.get(context.Background(), planKey{from: v, to: v}, func(context.Context) (*rangePlan, error) {
			builds[v]++
			return &rangePlan{cost: 300}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for v := range int64(10) {
		get(v)
		if b, _ := p.usage(); b > 1000 {
			t.Fatalf("after %d plans of 300 bytes: %d bytes kept, budget 1000", v+1, b)
		}
	}
	if b, n := p.usage(); n != 3 || b != 900 {
		t.Errorf("%d plans of %d bytes kept, want the last 3 (900 bytes)", n, b)
	}
	get(9)
	get(0)
	if builds[9] != 1 || builds[0] != 2 {
		t.Errorf("builds: the kept plan 9 %d times (want 1), the evicted plan 0 %d (want 2)", builds[9], builds[0])
	}
	p.clear()
	if b, n := p.usage(); b != 0 || n != 0 {
		t.Errorf("after clear: %d plans, %d bytes", n, b)
	}
	big := newRangePlans(100)
	if _, err := big.get(context.Background(), planKey{}, func(context.Context) (*rangePlan, error) { return &rangePlan{cost: 500}, nil }); err != nil {
		t.Fatal(err)
	}
	if _, n := big.usage(); n != 1 {
		t.Errorf("a plan over the whole budget is not kept alone (%d kept): a listing would read the log per file", n)
	}
}

// planCost charges at least what a plan holds on the heap: 20,000 change
// files as the feed gives them (a partition value each, a quarter with a
// deletion vector), named as a range directory names them.
func TestPlanCostCoversTheHeap(t *testing.T) {
	const n = 20000
	base := testenv.LiveHeap()
	files := make([]delta.ChangeFile, 0, n)
	for i := range n {
		v := fmt.Sprintf("2026-01-%02d", i%28+1)
		f := delta.ChangeFile{Version: int64(i / 10), Timestamp: time.Unix(int64(i), 0),
			Path:            fmt.Sprintf("date=%s/part-%05d-6f1c2e8a-4c4e-a3b8-da3c214613d0.c000.snappy.parquet", v, i),
			Size:            int64(4096 + i),
			PartitionValues: map[string]*string{"date": &v}, ChangeType: "insert"}
		f.Key = "/data/warehouse/orders/" + f.Path
		if i%4 == 0 {
			f.Deleted = &delta.DeletionVector{StorageType: "u", PathOrInlineDV: "ab^-aqEH.-t@S}K{vb[*k^", SizeInBytes: 34, Cardinality: 3}
		}
		files = append(files, f)
	}
	names := make(map[string]int, n)
	for i, f := range files {
		names[serve.ChangeFileName(i, f)] = i
	}
	held := testenv.LiveHeap() - base
	cost := planCost(files, names)
	t.Logf("%d change files: %d bytes of heap (%d each), charged %d (%d each)", n, held, held/n, cost, cost/n)
	if cost < held {
		t.Errorf("a plan of %d files holds %d bytes of heap, charged only %d", n, held, cost)
	}
	if cost > 2*held {
		t.Errorf("a plan of %d files holds %d bytes of heap, charged %d: more than twice", n, held, cost)
	}
	runtime.KeepAlive(files)
	runtime.KeepAlive(names)
}
