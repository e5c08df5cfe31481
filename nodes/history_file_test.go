package nodes

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/serve"
)

// mountTableDir mounts the table at root as MOUNTPOINT/t and returns
// MOUNTPOINT/t and its directory node (to Refresh it).
func mountTableDir(t *testing.T, root string) (string, *TableDir) {
	t.Helper()
	testenv.RequireFUSE(t)
	st, err := blobstore.Open(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cache, err := blobcache.New(blobcache.Options{DiskDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	d := NewTableDir(NewEnv(Options{}), "t", delta.Open(st, delta.Options{}), serve.NewTable("t", st, cache, serve.Options{}))
	if _, err := d.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(mountDirs(t, d), "t"), d
}

// commitInfoOnly writes version v of the table at root: a commit holding
// only a commitInfo whose operation parameter has HTML's special
// characters.
func commitInfoOnly(t *testing.T, root string, v int64) {
	t.Helper()
	line := `{"commitInfo":{"timestamp":1700000000000,"operation":"OPTIMIZE","operationParameters":{"predicate":"a < b && c > 'd'"}}}` + "\n"
	p := filepath.Join(root, "_delta_log", fmt.Sprintf("%020d.json", v))
	if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

// _history.jsonl stats with the size of its content, for the version
// @latest is at; a handle opened before @latest moved gives exactly the
// old content in its first bytes and goes on with the new version's line
// (a reader whose stat came after the move); a fresh stat gives the new
// size; `<`, `>` and `&` are not escaped.
func TestHistoryFileSizeIsContent(t *testing.T) {
	root := testenv.CopyFixture(t, "dat/basic_append")
	dir, d := mountTableDir(t, root)
	p := filepath.Join(dir, HistoryName)
	before := statSize(t, p)
	old, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if before == 0 || int64(len(old)) != before {
		t.Fatalf("stat size %d, content %d bytes", before, len(old))
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	latest, _ := d.current(context.Background())
	commitInfoOnly(t, root, latest.Version()+1)
	if _, err := d.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	prefix := make([]byte, before)
	if _, err := io.ReadFull(f, prefix); err != nil || !bytes.Equal(prefix, old) {
		t.Fatalf("first %d bytes of a handle opened before the commit: %v, %q; want %q", before, err, prefix, old)
	}
	rest, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	after := statSizeEventually(t, p, before)
	if got := before + int64(len(rest)); got != after {
		t.Errorf("handle gave %d bytes in all, stat now says %d", got, after)
	}
	if !bytes.Contains(rest, []byte(`"predicate":"a < b && c > 'd'"`)) {
		t.Errorf("new line %q: want the predicate unescaped", rest)
	}
	now, err := os.ReadFile(p)
	if err != nil || int64(len(now)) != after || !bytes.HasPrefix(now, old) {
		t.Errorf("content after the commit: %d bytes, %v; stat says %d, old content a prefix: %v", len(now), err, after, bytes.HasPrefix(now, old))
	}
}

func statSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// statSizeEventually returns the size once it differs from old (the
// kernel keeps attributes for the short timeout, 1 s).
func statSizeEventually(t *testing.T, p string, old int64) int64 {
	t.Helper()
	for i := 0; i < 40; i++ {
		if n := statSize(t, p); n != old {
			return n
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: size still %d", p, old)
	return 0
}

// countingTable counts the history reads of a Table.
type countingTable struct {
	Table
	reads atomic.Int32
}

func (c *countingTable) HistoryEach(ctx context.Context, from, to int64, fn func(delta.CommitSummary) error) error {
	c.reads.Add(1)
	return c.Table.HistoryEach(ctx, from, to, fn)
}

func (c *countingTable) HistorySize(ctx context.Context, from, to int64) (int64, error) {
	c.reads.Add(1)
	return c.Table.HistorySize(ctx, from, to)
}

// A plain listing of a table (READDIRPLUS) does not count the history's
// size; a stat of _history.jsonl does, once while @latest stays.
func TestHistorySizeNotCountedByListing(t *testing.T) {
	testenv.RequireFUSE(t)
	st, err := blobstore.Open(context.Background(), testenv.Fixture(t, "dat/basic_append"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ct := &countingTable{Table: delta.Open(st, delta.Options{})}
	d := NewTableDir(NewEnv(Options{}), "t", ct, nil)
	if _, err := d.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mountDirs(t, d), "t")
	if _, err := os.ReadDir(dir); err != nil {
		t.Fatal(err)
	}
	if n := ct.reads.Load(); n != 0 {
		t.Errorf("listing the table read the history %d times, want 0", n)
	}
	statSize(t, filepath.Join(dir, HistoryName))
	time.Sleep(1100 * time.Millisecond) // past the attribute timeout
	statSize(t, filepath.Join(dir, HistoryName))
	if n := ct.reads.Load(); n != 1 {
		t.Errorf("two stats read the history %d times, want 1 (cached for the version)", n)
	}
}
