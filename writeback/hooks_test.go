package writeback

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// racingStore lets another writer commit first, once, just before the
// wrapped committer puts its commit file.
type racingStore struct {
	*blobstore.Store
	rival func()
	raced atomic.Bool
}

func (s *racingStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if strings.HasPrefix(key, delta.LogDir) && strings.HasSuffix(key, ".json") && !s.raced.Swap(true) {
		s.rival()
	}
	return s.Store.PutIfAbsent(ctx, key, data)
}

// OnCommit hears of each version committed, OnConflict of each version
// lost to another writer, whatever the store's keys look like.
func TestCommitterHooks(t *testing.T) {
	dir := testenv.CopyFixture(t, "dat/basic_append")
	base := latest(t, dir).Version()
	store, err := blobstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rivalFile := writeParquet(t, "rival.parquet", []numberRow{{Number: ptr(int64(1))}})
	rs := &racingStore{Store: store, rival: func() {
		if _, err := newCommitter(t, dir).Append(context.Background(), []File{{LocalPath: rivalFile, Name: "rival.parquet"}}); err != nil {
			t.Errorf("rival append: %v", err)
		}
	}}
	var commits, conflicts []int64
	c := New(delta.Open(rs, delta.Options{}), Options{
		OnCommit:   func(v int64) { commits = append(commits, v) },
		OnConflict: func(v int64) { conflicts = append(conflicts, v) },
	})
	mine := writeParquet(t, "mine.parquet", []numberRow{{Number: ptr(int64(2))}})
	res, err := c.Append(context.Background(), []File{{LocalPath: mine, Name: "mine.parquet"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != base+2 {
		t.Fatalf("committed version %d, want %d (after the rival's)", res.Version, base+2)
	}
	if len(commits) != 1 || commits[0] != base+2 {
		t.Errorf("OnCommit heard %v, want [%d]", commits, base+2)
	}
	if len(conflicts) != 1 || conflicts[0] != base+1 {
		t.Errorf("OnConflict heard %v, want [%d]", conflicts, base+1)
	}
}
