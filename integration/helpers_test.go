package integration

// Helpers of the mount tests: mount fixture tables in-process on a
// temporary mountpoint, copy a fixture table to scratch space, list the
// live files the engine sees.

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// Fixture tables used by the mount tests.
const (
	fixtureDV      = "delta-kernel-rs/golden-dv-partitioned-with-checkpoint"
	fixtureCM      = "delta-kernel-rs/golden-dv-with-columnmapping"
	fixtureEscaped = "delta-kernel-rs/golden-data-reader-escaped-chars"
	fixtureRefused = "delta-rs/simple_table_features"
)

// mountFS mounts cfg (its Mountpoint and CacheDir default to fresh temp
// dirs) and unmounts it when the test ends. It returns the mountpoint.
func mountFS(t testing.TB, cfg mount.Config) string {
	t.Helper()
	testenv.RequireFUSE(t)
	if cfg.Mountpoint == "" {
		cfg.Mountpoint = t.TempDir()
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	// The shared fixtures are never written: a mount of them has no inbox.
	for _, s := range cfg.Sources {
		if strings.HasPrefix(s.URL, testenv.Fixtures(t)) {
			cfg.ReadOnly = true
		}
	}
	srv, err := mount.Mount(context.Background(), cfg)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return cfg.Mountpoint
}

// testWriter sends log lines to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// latestSnapshot reads a table's newest snapshot with the engine.
func latestSnapshot(t *testing.T, root string) *delta.Snapshot {
	t.Helper()
	ctx := context.Background()
	st, err := blobstore.Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	snap, err := delta.Open(st, delta.Options{}).Latest(ctx)
	if err != nil {
		t.Fatalf("latest of %s: %v", root, err)
	}
	return snap
}

// liveFiles returns the snapshot's live files keyed by their path inside
// the snapshot directory (Hive layout, base name).
func liveFiles(t *testing.T, snap *delta.Snapshot) map[string]delta.LiveFile {
	t.Helper()
	files, err := snap.LiveFiles()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]delta.LiveFile{}
	for _, f := range files {
		dir := ""
		for _, c := range snap.Metadata().PartitionColumns {
			dir = filepath.Join(dir, delta.HivePathSegment(c, f.PartitionValues[c]))
		}
		out[filepath.Join(dir, filepath.Base(f.Key))] = f
	}
	return out
}

// eventually retries cond every 50ms until it holds or d passes.
func eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
