package writeback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
)

// checkpointGate is a table's storage whose checkpoint writes (Put of
// *.checkpoint.parquet and _last_checkpoint) wait for open, or fail
// while refuse is set.
type checkpointGate struct {
	delta.Storage
	open chan struct{}

	mu     sync.Mutex
	refuse bool
	puts   int
}

func (g *checkpointGate) Put(ctx context.Context, key string, r io.Reader) error {
	if strings.Contains(key, ".checkpoint.") || strings.HasSuffix(key, "_last_checkpoint") {
		g.mu.Lock()
		g.puts++
		refuse := g.refuse
		g.mu.Unlock()
		if refuse {
			return errors.New("checkpoint refused by the test")
		}
		select {
		case <-g.open:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Storage.Put(ctx, key, r)
}

func gatedCommitter(t *testing.T, dir string, g *checkpointGate) *Committer {
	t.Helper()
	st, err := blobstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g.Storage = st
	c := New(delta.Open(g, delta.Options{}), Options{EngineInfo: "deltafs/test"})
	t.Cleanup(c.Close)
	return c
}

func appendN(t *testing.T, c *Committer, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		src := writeParquet(t, fmt.Sprintf("f%d.parquet", i), []idRow{{ID: ptr(int64(i))}})
		if _, err := c.Append(context.Background(), []File{{LocalPath: src, Name: "f.parquet"}}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
}

// The commit at a checkpoint interval is acknowledged without waiting for
// its checkpoint (the old Append wrote it before returning: a latency
// spike on every tenth close()); the checkpoint follows in the background.
func TestCheckpointOffTheAcknowledgement(t *testing.T) {
	dir := testTable{schema: structSchema(field("id", `"long"`, true, ""))}.create(t)
	g := &checkpointGate{open: make(chan struct{})}
	c := gatedCommitter(t, dir, g)
	done := make(chan struct{})
	go func() {
		defer close(done)
		appendN(t, c, 1, 10) // versions 1..10: 10 is a checkpoint's
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		close(g.open)
		<-done
		t.Fatal("the append of version 10 waited for its checkpoint")
	}
	cp := filepath.Join(dir, "_delta_log", "00000000000000000010.checkpoint.parquet")
	if _, err := os.Stat(cp); err == nil {
		t.Fatal("checkpoint written while its writes were held")
	}
	close(g.open)
	c.WaitCheckpoints()
	if _, err := os.Stat(cp); err != nil {
		t.Fatalf("no checkpoint once the store took it: %v", err)
	}
}

// A checkpoint missed (its writer crashed, or the store refused it) is
// written by the next commit of a fresh Committer (after a restart): the
// old code wrote checkpoints only at multiples of the interval.
func TestMissedCheckpointWrittenByTheNextWriter(t *testing.T) {
	dir := testTable{schema: structSchema(field("id", `"long"`, true, ""))}.create(t)
	g := &checkpointGate{open: make(chan struct{}), refuse: true}
	close(g.open)
	old := checkpointRetries
	checkpointRetries = nil // fail at once
	t.Cleanup(func() { checkpointRetries = old })
	a := gatedCommitter(t, dir, g)
	appendN(t, a, 1, 10)
	a.WaitCheckpoints()
	a.Close()
	if g.puts == 0 {
		t.Fatal("no checkpoint was attempted at version 10")
	}
	b := newCommitter(t, dir) // the next writer, after a restart
	appendN(t, b, 11, 1)
	b.WaitCheckpoints()
	if _, err := os.Stat(filepath.Join(dir, "_delta_log", "00000000000000000011.checkpoint.parquet")); err != nil {
		t.Fatalf("the commit after a missed checkpoint wrote none: %v", err)
	}
	if got := latest(t, dir).Version(); got != 11 {
		t.Errorf("latest %d, want 11", got)
	}
}
