package delta

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"sync"
)

// tableState is the reconciled state of a table after replaying actions up
// to some version. It is built once and then never modified: applying a
// commit produces a new state (see apply), so states can be shared by
// snapshots and caches without locks.
type tableState struct {
	protocol   *Protocol
	metadata   *Metadata
	live       map[string]*Add    // (path, dv id) -> newest add
	tombstones map[string]*Remove // (path, dv id) -> newest remove
	txns       map[string]*Txn
	domains    map[string]*DomainMetadata // live domains only
}

func newTableState() *tableState {
	return &tableState{
		live:       map[string]*Add{},
		tombstones: map[string]*Remove{},
		txns:       map[string]*Txn{},
		domains:    map[string]*DomainMetadata{},
	}
}

// clone returns a copy whose maps can be modified without affecting s.
func (s *tableState) clone() *tableState {
	return &tableState{
		protocol:   s.protocol,
		metadata:   s.metadata,
		live:       maps.Clone(s.live),
		tombstones: maps.Clone(s.tombstones),
		txns:       maps.Clone(s.txns),
		domains:    maps.Clone(s.domains),
	}
}

// applyBatch applies the actions of one commit (or one checkpoint) to s,
// which must be private to the caller. Order within a batch carries no
// meaning: removes are applied before adds, so remove(p, dvA) + add(p, dvB)
// leaves (p, dvB) live whatever the line order.
func (s *tableState) applyBatch(actions []*Action) {
	for _, a := range actions {
		if r := a.Remove; r != nil {
			k := r.key()
			delete(s.live, k)
			s.tombstones[k] = r
		}
	}
	for _, a := range actions {
		switch {
		case a.Add != nil:
			k := a.Add.key()
			s.live[k] = a.Add
			delete(s.tombstones, k)
		case a.Protocol != nil:
			s.protocol = a.Protocol
		case a.MetaData != nil:
			s.metadata = a.MetaData
		case a.Txn != nil:
			s.txns[a.Txn.AppID] = a.Txn
		case a.DomainMetadata != nil:
			if a.DomainMetadata.Removed {
				delete(s.domains, a.DomainMetadata.Domain)
			} else {
				s.domains[a.DomainMetadata.Domain] = a.DomainMetadata
			}
		}
	}
}

// commitFile is one parsed commit.
type commitFile struct {
	version int64
	file    LogFile
	actions []*Action
}

// readCommit reads and parses one commit file.
func readCommit(ctx context.Context, s Storage, f LogFile) (*commitFile, error) {
	data, err := ReadAll(ctx, s, f.Key)
	if err != nil {
		return nil, fmt.Errorf("read commit %d: %w", f.Version, err)
	}
	c := &commitFile{version: f.Version, file: f}
	err = ParseActions(data, func(a *Action) error {
		if a.CheckpointMetadata != nil || a.Sidecar != nil {
			return corruptf("%s action in a commit", actionName(a))
		}
		c.actions = append(c.actions, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("parse commit %d: %w", f.Version, err)
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
	errs := make([]error, len(files))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := min(len(files), 4*runtime.GOMAXPROCS(0))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = read(ctx, files[i])
				if errs[i] != nil {
					cancel()
				}
			}
		}()
	}
feed:
	for i := range files {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil && len(files) > 0 && out[len(files)-1] == nil {
		return nil, err
	}
	return out, nil
}
