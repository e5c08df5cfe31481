package writeback

import (
	"context"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// A commit put cut short by a cancelled context may have stored the
// commit (a remote PUT the server completed): the append fails, but the
// data files it references must stay.
func TestCancelledPutKeepsDataFiles(t *testing.T) {
	dir := testenv.CopyFixture(t, "dat/basic_append")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := faultCommitter(t, dir, time.Second, func(s *blobstore.Store, key string, data []byte) error {
		if err := s.PutIfAbsent(context.Background(), key, data); err != nil {
			return err
		}
		cancel()
		return context.Canceled
	})
	src := writeParquet(t, "a.parquet", []numberRow{{Number: ptr[int64](1)}})
	_, appendErr := c.Append(ctx, []File{{LocalPath: src, Name: "a.parquet"}})
	if appendErr == nil {
		t.Fatal("Append succeeded after its context was cancelled")
	}
	snap := latest(t, dir)
	files := listFiles(t, dir)
	for _, a := range snap.Files() {
		key, err := snap.DataKey(a)
		if err != nil {
			t.Fatal(err)
		}
		if !files[key] {
			t.Errorf("version %d references %s, which the failed append removed (append error: %v)", snap.Version(), key, appendErr)
		}
	}
}
