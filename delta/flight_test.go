package delta

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatedStore blocks every read of a commit file until open is closed or
// the reader's context ends; entered is told of each blocked read.
type gatedStore struct {
	dirStore
	open    chan struct{}
	entered chan struct{}
	once    sync.Once
}

func (g *gatedStore) ReadRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if strings.HasSuffix(key, ".json") && strings.HasPrefix(key, LogDir) {
		g.once.Do(func() { close(g.entered) })
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.dirStore.ReadRange(ctx, key, off, length)
}

// A build shared by two requests is not failed for the second when the
// first is interrupted: the waiter builds the version itself.
func TestSnapshotBuildSurvivesInterruptedLeader(t *testing.T) {
	store := &gatedStore{dirStore: dirStore{fixtureTable(t, "dat/basic_append")}, open: make(chan struct{}), entered: make(chan struct{})}
	tbl := Open(store, Options{})

	leaderCtx, cancel := context.WithCancel(context.Background())
	leader := make(chan error, 1)
	go func() {
		_, err := tbl.Snapshot(leaderCtx, 1)
		leader <- err
	}()
	<-store.entered // the leader's build is reading the log

	type result struct {
		snap *Snapshot
		err  error
	}
	waiter := make(chan result, 1)
	go func() {
		s, err := tbl.Snapshot(context.Background(), 1)
		waiter <- result{s, err}
	}()
	for tbl.flights.waiters(1) != 1 {
		time.Sleep(time.Millisecond)
	}

	cancel() // the leader's reader is interrupted
	if err := <-leader; err == nil {
		t.Fatal("the interrupted leader got a snapshot")
	}
	close(store.open)
	r := <-waiter
	if r.err != nil {
		t.Fatalf("the waiter, never interrupted, got the leader's error: %v", r.err)
	}
	if r.snap.Version() != 1 {
		t.Fatalf("waiter got version %d, want 1", r.snap.Version())
	}
}
