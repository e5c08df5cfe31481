package delta

import (
	"context"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/scalegen"
)

// requestCounter counts the requests made to a Storage, by kind.
type requestCounter struct {
	Storage
	reads, lists, stats atomic.Int64
}

func (c *requestCounter) List(ctx context.Context, dir, from string) ([]ObjectInfo, error) {
	c.lists.Add(1)
	return c.Storage.List(ctx, dir, from)
}

func (c *requestCounter) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	c.stats.Add(1)
	return c.Storage.Stat(ctx, key)
}

func (c *requestCounter) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	c.reads.Add(1)
	return c.Storage.ReadRange(ctx, key, off, n)
}

func (c *requestCounter) total() int64 { return c.reads.Load() + c.lists.Load() + c.stats.Load() }

// Time travel by time on a long log with in-commit timestamps is a
// binary search: at most 40 storage requests for 10,000 commits (about 17
// reads for 100,000), no listing of the log beyond the refresh from the
// newest version, and the answer the rule gives.
func TestTimeTravelOnLongLogReadsLittle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	const n = 10_000
	if _, err := scalegen.Generate(scalegen.Spec{Dir: dir, Commits: n, FilesPerCommit: 1, CheckpointEvery: 1000, MaxLive: 100, ICT: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, v := range []int64{0, 1, 4321, 7_654, n - 2, n - 1} {
		cs := &requestCounter{Storage: dirStore{dir}}
		tbl := Open(cs, Options{})
		if _, err := tbl.Latest(ctx); err != nil {
			t.Fatal(err)
		}
		before, lists := cs.total(), cs.lists.Load()
		ts := scalegen.CommitTime(v).Add(500 * time.Millisecond) // between v and v+1
		got, err := tbl.VersionAt(ctx, ts)
		if err != nil || got != v {
			t.Errorf("VersionAt(%s) = %d, %v; want %d", ts, got, err, v)
		}
		if req := cs.total() - before; req > 40 {
			t.Errorf("VersionAt for version %d made %d storage requests, want <= 40", v, req)
		}
		if l := cs.lists.Load() - lists; l > 1 { // Latest's refresh lists from the newest version
			t.Errorf("VersionAt for version %d made %d listings, want at most the refresh's one", v, l)
		}
	}
	// Before the first commit: not found, still without listing.
	cs := &requestCounter{Storage: dirStore{dir}}
	tbl := Open(cs, Options{})
	tbl.Latest(ctx)
	if _, err := tbl.VersionAt(ctx, scalegen.CommitTime(0).Add(-time.Hour)); err == nil {
		t.Error("a time before the first commit resolved to a version")
	}
}
