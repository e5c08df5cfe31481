package integration

// Several `deltafs mount` processes sharing one S3 table, with the
// store's put-if-absent as their only coordination.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// Shape of TestS3MultiMountAppends.
const (
	multiMounts     = 3
	multiFiles      = 10 // per mount
	multiRefresh    = time.Second
	multiLagAllowed = 4 * multiRefresh // poll deadline for @latest
)

// TestS3MultiMountAppends starts three `deltafs mount` processes on one S3
// table (refresh 1s) and has each append 10 files through its inbox, all
// 30 at once: the table gets 30 new contiguous versions, each holding
// exactly one of the files, and every mount's @latest reaches the last of
// them within a few refresh intervals (the lag is logged).
func TestS3MultiMountAppends(t *testing.T) {
	testenv.RequireFUSE(t)
	srv := testenv.StartS3(t)
	testenv.UploadDir(t, srv.URL, "warehouse/shared", testenv.Fixture(t, fixtureAppend))
	root := filepath.Join(srv.BucketDir, "warehouse", "shared")
	base := latestSnapshot(t, root)
	mounts := make([]*procMount, multiMounts)
	for i := range mounts {
		mounts[i] = startMount(t, mountOpts{cacheDir: t.TempDir(),
			sources: []string{"--refresh=" + multiRefresh.String(), "t=" + srv.BucketURL("warehouse/shared")}})
	}
	t0 := time.Now()
	errs := appendFromAll(t, mounts)
	done := time.Now()
	t.Logf("%d concurrent appends over %d mounts took %v", len(errs), multiMounts, done.Sub(t0).Round(time.Millisecond))
	for name, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	want := base.Version() + multiMounts*multiFiles
	checkEachFileOnce(t, root, base.Version(), errs)
	after := latestSnapshot(t, root)
	if after.Version() != want || len(after.Files()) != len(base.Files())+len(errs) {
		t.Errorf("latest v%d with %d files, want v%d with %d", after.Version(), len(after.Files()), want, len(base.Files())+len(errs))
	}
	lags, oks := make([]time.Duration, len(mounts)), make([]bool, len(mounts))
	var wg sync.WaitGroup
	for i, m := range mounts {
		wg.Go(func() { lags[i], oks[i] = latestLag(m.mnt, want, done) })
	}
	wg.Wait()
	for i, m := range mounts {
		lag, ok := lags[i], oks[i]
		if !ok {
			t.Errorf("mount %d: @latest not at @v%d %v after the last close", i, want, multiLagAllowed)
			continue
		}
		t.Logf("mount %d: @latest -> @v%d %v after the last close", i, want, lag.Round(time.Millisecond))
		if ents, err := os.ReadDir(filepath.Join(m.mnt, "t", "@latest")); err != nil || len(ents) != len(after.Files()) {
			t.Errorf("mount %d: @latest lists %d entries (%v), want %d", i, len(ents), err, len(after.Files()))
		}
	}
}

// appendFromAll writes multiFiles distinct small files into each mount's
// inbox, every write in its own goroutine, and returns each file's error
// by name (m<mount>-f<file>.parquet).
func appendFromAll(t *testing.T, mounts []*procMount) map[string]error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs = map[string]error{}
	)
	for i, m := range mounts {
		for j := range multiFiles {
			name := fmt.Sprintf("m%d-f%d.parquet", i, j)
			data := parquetBytes(t, []basicRow{{ptr(name), ptr(int64(100*i + j)), nil}})
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := os.WriteFile(filepath.Join(m.mnt, "t", "inbox", name), data, 0o644)
				mu.Lock()
				errs[name] = err
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	return errs
}

// checkEachFileOnce checks that the versions after base each record one
// of the files of errs (commitInfo deltafs.sourceFiles) and that every
// file is recorded exactly once.
func checkEachFileOnce(t *testing.T, root string, base int64, errs map[string]error) {
	t.Helper()
	seen := map[string]int64{}
	for v := base + 1; v <= base+int64(len(errs)); v++ {
		srcs := commitSources(t, root, v)
		if len(srcs) != 1 {
			t.Errorf("version %d records sources %v, want one file", v, srcs)
		}
		for _, s := range srcs {
			if prev, dup := seen[s]; dup {
				t.Errorf("%s committed in versions %d and %d", s, prev, v)
			}
			seen[s] = v
		}
	}
	for name := range errs {
		if _, ok := seen[name]; !ok {
			t.Errorf("%s is in none of versions %d..%d", name, base+1, base+int64(len(errs)))
		}
	}
}

// latestLag polls MOUNT/t/@latest until it points at @v<want> and returns
// how long after since that was, or false after multiLagAllowed.
func latestLag(mnt string, want int64, since time.Time) (time.Duration, bool) {
	target := fmt.Sprintf("@v%d", want)
	ctx, cancel := context.WithDeadline(context.Background(), since.Add(multiLagAllowed))
	defer cancel()
	for {
		if got, err := os.Readlink(filepath.Join(mnt, "t", "@latest")); err == nil && got == target {
			return time.Since(since), true
		}
		select {
		case <-ctx.Done():
			return 0, false
		case <-time.After(20 * time.Millisecond):
		}
	}
}
