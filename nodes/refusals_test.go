package nodes

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/serve"
)

// logBuffer is a bytes.Buffer safe for the mount's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A burst of writes into a snapshot (creates, mkdirs, unlinks, renames,
// chmods, opens for writing) is answered EROFS every time and logged at
// the default level once, naming the op, table, version and path.
func TestSnapshotWriteRefusalsLoggedOnce(t *testing.T) {
	testenv.RequireFUSE(t)
	table := testenv.Fixture(t, "dat/basic_append")
	st, err := blobstore.Open(context.Background(), table)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var logs logBuffer
	env := NewEnv(Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	cache, err := blobcache.New(blobcache.Options{DiskDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	mnt := mountDirs(t, NewTableDir(env, "t", delta.Open(st, delta.Options{}), serve.NewTable("t", st, cache, serve.Options{})))
	snap := filepath.Join(mnt, "t", "@v1")
	ents, err := os.ReadDir(snap)
	if err != nil || len(ents) == 0 {
		t.Fatalf("read %s: %v, %d entries", snap, ents, len(ents))
	}
	data := filepath.Join(snap, ents[0].Name())
	writes := []func(i int) error{
		func(i int) error { return os.WriteFile(filepath.Join(snap, "new"+string(rune('a'+i%26))), nil, 0o644) },
		func(i int) error { return os.Mkdir(filepath.Join(snap, "dir"), 0o755) },
		func(i int) error { return os.Remove(data) },
		func(i int) error { return os.Rename(data, data+".old") },
		func(i int) error { return os.Chmod(data, 0o600) },
		func(i int) error { _, err := os.OpenFile(data, os.O_WRONLY, 0); return err },
		func(i int) error { return os.Symlink("x", filepath.Join(snap, "link")) },
		func(i int) error { return os.Chmod(filepath.Join(mnt, "t"), 0o700) },
	}
	const rounds = 10
	for i := range rounds {
		for k, w := range writes {
			if err := w(i); !errors.Is(err, syscall.EROFS) {
				t.Fatalf("write %d (round %d): %v, want EROFS", k, i, err)
			}
		}
	}
	lines := strings.Count(logs.String(), "write refused")
	if lines != 1 {
		t.Fatalf("%d refusals logged %d times, want once:\n%s", rounds*len(writes), lines, logs.String())
	}
	env.refusals.mu.Lock()
	suppressed := env.refusals.suppressed
	env.refusals.mu.Unlock()
	if n := rounds * len(writes); suppressed < n-1 { // os.Remove asks twice (unlink, rmdir)
		t.Errorf("%d refusals counted after the logged one, want at least %d: not every write reached deltafs", suppressed, n-1)
	}
	for _, want := range []string{"level=WARN", "op=create", "table=t", "version=1", "path=t/@v1/newa", "errno=EROFS"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log line lacks %q:\n%s", want, logs.String())
		}
	}
}

// After refusalInterval the next refusal is logged again and says how
// many went unlogged.
func TestRefusalLogCountsSuppressed(t *testing.T) {
	var r refusalLog
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if ok, n := r.take(t0); !ok || n != 0 {
		t.Fatalf("first refusal: log %v, suppressed %d; want true, 0", ok, n)
	}
	for i := 1; i <= 5; i++ {
		if ok, _ := r.take(t0.Add(time.Duration(i) * time.Second)); ok {
			t.Fatalf("refusal %d within the interval logged", i)
		}
	}
	if ok, n := r.take(t0.Add(refusalInterval)); !ok || n != 5 {
		t.Fatalf("after the interval: log %v, suppressed %d; want true, 5", ok, n)
	}
}

func TestTableVersionOf(t *testing.T) {
	for _, c := range []struct{ p, table, version string }{
		{"t/@v12/region=eu/part-0.parquet", "t", "12"},
		{"t/@latest", "t", ""},
		{"t", "t", ""},
		{"", "", ""},
		{"orders/@vx/y", "orders", ""},
	} {
		if table, v := tableVersionOf(c.p); table != c.table || v != c.version {
			t.Errorf("%s: %q %q, want %q %q", c.p, table, v, c.table, c.version)
		}
	}
}
