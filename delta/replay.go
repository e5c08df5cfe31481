package delta

// Log replay [PROTOCOL.md "Action Reconciliation"]: a table state (the
// protocol, metadata, live files, tombstones, txns and domains of one
// version) and the pure function that applies commits to it; reading and
// parsing a commit file.

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"sync"

	"github.com/deltafs/deltafs/delta/action"
)

// tableState is the reconciled state of a table after replaying actions up
// to some version. It is built once and then never modified: replaying
// commits on top of it produces a new state (see replay), so states are
// shared by snapshots and caches without locks.
//
// files and tombstones are in log order (checkpoint rows, then commit
// lines), not sorted: keeping them as slices instead of maps lets a
// checkpoint of 100k files load in one pass and a few commits be applied
// by one filtering copy.
type tableState struct {
	protocol   *Protocol
	metadata   *Metadata
	files      []*Add    // live: unique (path, dv id) keys
	tombstones []*Remove // newest remove per key not re-added
	txns       map[string]*Txn
	domains    map[string]*DomainMetadata // live domains only
	bytes      int64                      // estimated heap bytes of files and tombstones (see memsize.go)
}

func newTableState() *tableState {
	return &tableState{txns: map[string]*Txn{}, domains: map[string]*DomainMetadata{}}
}

// overlay collects the file changes of consecutive commits: per key, the
// newest action wins. Within one commit, removes apply before adds, so
// remove(p, dvA) + add(p, dvB) leaves (p, dvB) live whatever the order.
type overlay struct {
	adds    map[string]*Add    // key -> add (live after the commits)
	removes map[string]*Remove // key -> remove (tombstone after the commits)
	order   []string           // keys in first-touched order, for stable output
}

func newOverlay() *overlay {
	return &overlay{adds: map[string]*Add{}, removes: map[string]*Remove{}}
}

func (o *overlay) touch(k string) {
	if _, a := o.adds[k]; !a {
		if _, r := o.removes[k]; !r {
			o.order = append(o.order, k)
		}
	}
}

// applyCommit records one commit's actions into o and st's non-file
// fields. st must be private to the caller.
func (o *overlay) applyCommit(st *tableState, actions []*Action) {
	for _, a := range actions {
		if r := a.Remove; r != nil {
			k := r.Key()
			o.touch(k)
			delete(o.adds, k)
			o.removes[k] = r
		}
	}
	for _, a := range actions {
		switch {
		case a.Add != nil:
			k := a.Add.Key()
			o.touch(k)
			delete(o.removes, k)
			o.adds[k] = a.Add
		default:
			st.applyNonFile(a)
		}
	}
}

// applyNonFile applies protocol, metaData, txn and domainMetadata actions.
func (st *tableState) applyNonFile(a *Action) {
	switch {
	case a.Protocol != nil:
		st.protocol = a.Protocol
	case a.MetaData != nil:
		st.metadata = a.MetaData
	case a.Txn != nil:
		st.txns[a.Txn.AppID] = a.Txn
	case a.DomainMetadata != nil:
		if a.DomainMetadata.Removed {
			delete(st.domains, a.DomainMetadata.Domain)
		} else {
			st.domains[a.DomainMetadata.Domain] = a.DomainMetadata
		}
	}
}

// replay returns the state after applying commits (in version order) to
// base. base is not modified.
func replay(base *tableState, commits []*commitFile) *tableState {
	st := &tableState{
		protocol: base.protocol, metadata: base.metadata,
		txns: maps.Clone(base.txns), domains: maps.Clone(base.domains),
	}
	o := newOverlay()
	for _, c := range commits {
		o.applyCommit(st, c.actions)
	}
	st.bytes = base.bytes
	st.files = make([]*Add, 0, len(base.files)+len(o.adds))
	for _, a := range base.files {
		if !o.touched(a.Key()) {
			st.files = append(st.files, a)
		} else {
			st.bytes -= addBytes(a)
		}
	}
	st.tombstones = make([]*Remove, 0, len(base.tombstones)+len(o.removes))
	for _, r := range base.tombstones {
		if !o.touched(r.Key()) {
			st.tombstones = append(st.tombstones, r)
		} else {
			st.bytes -= removeBytes(r)
		}
	}
	for _, k := range o.order {
		if a, ok := o.adds[k]; ok {
			st.files = append(st.files, a)
			st.bytes += addBytes(a) + partitionBytes(a.PartitionValues)
		} else if r, ok := o.removes[k]; ok {
			st.tombstones = append(st.tombstones, r)
			st.bytes += removeBytes(r) + partitionBytes(r.PartitionValues)
		}
	}
	return st
}

func (o *overlay) touched(k string) bool {
	if _, ok := o.adds[k]; ok {
		return true
	}
	_, ok := o.removes[k]
	return ok
}

// commitFile is one parsed commit.
type commitFile struct {
	version int64
	file    LogFile
	actions []*Action
}

// bytes estimates the heap bytes of the parsed commit.
func (c *commitFile) bytes() int64 {
	n := int64(128)
	for _, a := range c.actions {
		n += 64
		switch {
		case a.Add != nil:
			n += addBytes(a.Add) + partitionBytes(a.Add.PartitionValues)
		case a.Remove != nil:
			n += removeBytes(a.Remove) + partitionBytes(a.Remove.PartitionValues)
		case a.MetaData != nil:
			n += int64(len(a.MetaData.SchemaString)) + 512
		default:
			n += int64(len(a.CommitInfo)) + 64
		}
	}
	return n
}

// readCommit reads and parses one commit file.
func readCommit(ctx context.Context, s Storage, f LogFile) (*commitFile, error) {
	data, err := readSized(ctx, s, f.Key, f.Size)
	if err != nil {
		return nil, fmt.Errorf("read commit %d (%s): %w", f.Version, f.Key, err)
	}
	c := &commitFile{version: f.Version, file: f}
	err = action.Parse(data, func(a *Action) error {
		if a.CheckpointMetadata != nil || a.Sidecar != nil {
			return corruptf("%s action in a commit", actionName(a))
		}
		c.actions = append(c.actions, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("parse commit %d (%s): %w", f.Version, f.Key, err)
	}
	return c, nil
}

func actionName(a *Action) string {
	switch {
	case a.CheckpointMetadata != nil:
		return "checkpointMetadata"
	case a.Sidecar != nil:
		return "sidecar"
	}
	return "unknown"
}

// readCommits reads the given commits concurrently (they are independent
// small objects) and returns them in version order. read is consulted
// first for cached commits.
func readCommits(ctx context.Context, files []LogFile, read func(context.Context, LogFile) (*commitFile, error)) ([]*commitFile, error) {
	out := make([]*commitFile, len(files))
	err := parallel(ctx, len(files), func(ctx context.Context, i int) error {
		var err error
		out[i], err = read(ctx, files[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// parallel calls fn for 0..n-1 on up to 4*GOMAXPROCS goroutines (storage
// requests, not CPU work, bound them) and returns the first error, after
// which the remaining calls are skipped and ctx is cancelled.
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	return parallelN(ctx, n, 4*runtime.GOMAXPROCS(0), fn)
}

// parallelN is parallel on up to workers goroutines.
func parallelN(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(n, workers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if errs[i] = fn(ctx, i); errs[i] != nil {
					cancel()
				}
			}
		}()
	}
	fed := 0
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
			fed++
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if fed < n {
		return ctx.Err()
	}
	return nil
}
