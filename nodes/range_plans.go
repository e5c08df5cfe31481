package nodes

import (
	"container/list"
	"context"
	"sync"

	"github.com/deltafs/deltafs/delta"
)

// The plans of @changes ranges (ChangeRangeDir) are kept in one cache per
// mount under a byte budget (Options.RangePlanBytes), never by the range's
// inode: the kernel may keep thousands of range directories, each of which
// costs only its bounds. A plan evicted is made again, from the log, when
// its directory is next listed or looked into; it is the same plan. The
// range's end snapshot is the snapshot cache's (delta.Caches), asked for
// on use.
//
// Builds of one range are coalesced without a lock held across the log
// reads: the first request leads, the others wait for it; a waiter whose
// leader was interrupted builds itself (as delta's flight group).

// DefaultRangePlanBytes is the plans' budget when Options.RangePlanBytes
// is 0: an eighth of delta.DefaultStateBytes.
const DefaultRangePlanBytes = delta.DefaultStateBytes / 8

// Estimated heap bytes of a plan: planOverhead for the plan, its slice
// and map headers; per change file changeFileBytes for the ChangeFile and
// its name's map entry, plus the bytes of its strings, partitionMapBytes
// for a map of partition values and partitionBytes a value, dvBytes a
// deletion vector (planCost; TestPlanCostCoversTheHeap holds it to the
// heap).
const (
	planOverhead      = 512
	changeFileBytes   = 240
	partitionMapBytes = 256 // a small map: its header and first group
	partitionBytes    = 48  // per partition value: its slot, string and pointer
	dvBytes           = 128
)

// rangePlan is the plan of a range of changes: its change files and their
// names, or why the feed cannot give the range. Immutable once built.
type rangePlan struct {
	files   []delta.ChangeFile
	names   map[string]int // file name -> index in files
	refused error
	cost    int64 // estimated heap bytes
}

// planKey names a range of a table of the mount.
type planKey struct {
	dir      *TableDir
	from, to int64
}

// rangePlans is a mount's cache of range plans (see above). It is safe
// for concurrent use; mu is never held across a build.
type rangePlans struct {
	limit int64

	mu      sync.Mutex
	order   *list.List                // guarded by mu: *planEntry, most recent first
	entries map[planKey]*list.Element // guarded by mu
	bytes   int64                     // guarded by mu: the plans' estimated cost
	flights map[planKey]*planFlight   // guarded by mu: builds under way
}

type planEntry struct {
	key  planKey
	plan *rangePlan
}

// planFlight is a build under way; plan and err are set before done is
// closed.
type planFlight struct {
	done chan struct{}
	plan *rangePlan
	err  error
}

func newRangePlans(limit int64) *rangePlans {
	if limit <= 0 {
		limit = DefaultRangePlanBytes
	}
	return &rangePlans{limit: limit, order: list.New(), entries: map[planKey]*list.Element{}, flights: map[planKey]*planFlight{}}
}

// get returns the plan of k: cached, the one a build under way makes, or
// made by build (which must not return a nil plan without an error).
func (p *rangePlans) get(ctx context.Context, k planKey, build func(context.Context) (*rangePlan, error)) (*rangePlan, error) {
	for {
		p.mu.Lock()
		if e, ok := p.entries[k]; ok {
			p.order.MoveToFront(e)
			p.mu.Unlock()
			return e.Value.(*planEntry).plan, nil
		}
		if f, ok := p.flights[k]; ok {
			p.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if f.err != nil && Cancelled(f.err) && ctx.Err() == nil {
				continue // the leader was interrupted: build it here
			}
			return f.plan, f.err
		}
		f := &planFlight{done: make(chan struct{})}
		p.flights[k] = f
		p.mu.Unlock()
		f.plan, f.err = build(ctx)
		p.mu.Lock()
		delete(p.flights, k)
		if f.err == nil {
			p.addLocked(k, f.plan)
		}
		p.mu.Unlock()
		close(f.done)
		return f.plan, f.err
	}
}

// addLocked keeps plan, evicting the least recently used plans beyond the
// budget; the newest is kept even alone over it, so that a listing of a
// large range (a lookup per file) does not read the log per file.
func (p *rangePlans) addLocked(k planKey, plan *rangePlan) {
	p.entries[k] = p.order.PushFront(&planEntry{key: k, plan: plan})
	p.bytes += plan.cost
	for p.bytes > p.limit && p.order.Len() > 1 {
		e := p.order.Back()
		pe := e.Value.(*planEntry)
		p.order.Remove(e)
		delete(p.entries, pe.key)
		p.bytes -= pe.plan.cost
	}
}

// usage returns the plans' estimated bytes and count.
func (p *rangePlans) usage() (int64, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes, p.order.Len()
}

// clear drops every plan (Env.Close).
func (p *rangePlans) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.order.Init()
	p.entries = map[planKey]*list.Element{}
	p.bytes = 0
}

// planCost estimates the heap bytes of a plan of files named names.
func planCost(files []delta.ChangeFile, names map[string]int) int64 {
	n := int64(planOverhead)
	for _, f := range files {
		n += changeFileBytes + int64(len(f.Path)+len(f.Key)+len(f.ChangeType))
		if len(f.PartitionValues) > 0 {
			n += partitionMapBytes
		}
		for k, v := range f.PartitionValues {
			n += partitionBytes + int64(len(k))
			if v != nil {
				n += int64(len(*v))
			}
		}
		if f.Deleted != nil {
			n += dvBytes
		}
		if f.Pair != nil {
			n += 2 * dvBytes
		}
	}
	for name := range names {
		n += int64(len(name))
	}
	return n
}
