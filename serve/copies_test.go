package serve

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
)

// readAll reads the whole content c.
func readAll(t *testing.T, c Content) []byte {
	t.Helper()
	b := make([]byte, c.Size())
	if n, err := c.ReadAt(context.Background(), b, 0); n != len(b) || (err != nil && err != io.EOF) {
		t.Fatalf("read %d of %d bytes: %v", n, len(b), err)
	}
	return b
}

// dvFile returns a table of the DV fixture and its first live file with a
// deletion vector.
func dvFile(t *testing.T) (*Table, *delta.Snapshot, *delta.LiveFile) {
	t.Helper()
	tbl, snap := openFixture(t, "delta-kernel-rs/golden-dv-partitioned-with-checkpoint", Options{})
	files, err := snap.LiveFiles()
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		if files[i].Add.DeletionVector != nil {
			return tbl, snap, &files[i]
		}
	}
	t.Fatal("the DV fixture has no file with a deletion vector")
	return nil, nil, nil
}

// openUntilCopy opens f until it is served from its copy, failing after 10 s.
func openUntilCopy(t *testing.T, tbl *Table, snap *delta.Snapshot, f *delta.LiveFile) Content {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := tbl.Open(context.Background(), snap, f)
		if err != nil {
			t.Fatal(err)
		}
		if IsCopy(c) {
			return c
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("%s: no copy 10 s after repeated opens", f.Key)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func smallCopies(t *testing.T, tbl *Table) {
	old := copyMin
	copyMin = 0
	t.Cleanup(func() { resetCopies(t, tbl); copyMin = old })
}

// resetCopies forgets what tbl's mount knows of copies (as a new process
// would), once no copy work runs.
func resetCopies(t *testing.T, tbl *Table) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tbl.copies.mu.Lock()
		n := len(tbl.copies.busy)
		tbl.copies.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("copy work still running after 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tbl.copies.clear()
}

// A rewritten file opened a second time gets a materialized copy: later
// opens serve it from one local file (which the kernel may pass through)
// holding exactly the composite's bytes. The first open builds nothing.
func TestCopyAfterSecondOpen(t *testing.T) {
	tbl, snap, f := dvFile(t)
	smallCopies(t, tbl) // after the fixture's cleanups: its work stops before the cache goes
	c, err := tbl.Open(context.Background(), snap, f)
	if err != nil {
		t.Fatal(err)
	}
	if IsCopy(c) || c.File() != nil {
		t.Fatal("the first open is served from a copy")
	}
	want := readAll(t, c)
	c.Close()
	time.Sleep(100 * time.Millisecond)
	key := rewriteKey(t, tbl, snap, f)
	if df, ok := tbl.cache.Lookup(copyKeysData(key)); ok {
		df.Close()
		t.Fatal("a copy was built after one open")
	}
	cp := openUntilCopy(t, tbl, snap, f)
	defer cp.Close()
	if cp.File() == nil {
		t.Fatal("a copy without a local file")
	}
	if got := readAll(t, cp); !bytes.Equal(got, want) {
		t.Fatalf("the copy's %d bytes differ from the composite's %d", len(got), len(want))
	}
	disk, err := io.ReadAll(io.NewSectionReader(cp.File(), 0, 1<<40))
	if err != nil || !bytes.Equal(disk, want) {
		t.Fatalf("the copy's file holds %d bytes, not exactly the served %d (%v)", len(disk), len(want), err)
	}
}

// A copy damaged on disk (same size, other bytes) is not served by a
// process that did not build it: it is checked, discarded and built again,
// and the composite serves meanwhile. A copy whose sum is gone is
// discarded the same way, and an evicted copy falls back to the composite.
func TestCopyDamagedOrEvicted(t *testing.T) {
	tbl, snap, f := dvFile(t)
	smallCopies(t, tbl) // after the fixture's cleanups: its work stops before the cache goes
	cp := openUntilCopy(t, tbl, snap, f)
	want := readAll(t, cp)
	path := cp.(*copyContent).df.Path()
	cp.Close()

	// Damaged, in a process that did not build it.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	resetCopies(t, tbl)
	c, err := tbl.Open(context.Background(), snap, f)
	if err != nil {
		t.Fatal(err)
	}
	if IsCopy(c) {
		t.Fatal("an unchecked copy is served")
	}
	if got := readAll(t, c); !bytes.Equal(got, want) {
		t.Fatal("the composite beside a damaged copy serves other bytes")
	}
	c.Close()
	cp = openUntilCopy(t, tbl, snap, f)
	if got := readAll(t, cp); !bytes.Equal(got, want) {
		t.Fatal("the copy built again after damage serves other bytes")
	}
	cp.Close()

	// Its sum gone.
	key := rewriteKey(t, tbl, snap, f)
	_, sumKey := copyKeys(key)
	sf, ok := tbl.cache.Lookup(sumKey)
	if !ok {
		t.Fatal("no sum beside the copy")
	}
	sf.Discard()
	sf.Close()
	resetCopies(t, tbl)
	if c, err := tbl.Open(context.Background(), snap, f); err != nil || IsCopy(c) {
		t.Fatalf("copy without a sum: copy=%v, %v", err == nil && IsCopy(c), err)
	} else {
		c.Close()
	}
	cp = openUntilCopy(t, tbl, snap, f)
	cp.Close()

	// Evicted.
	df, ok := tbl.cache.Lookup(copyKeysData(key))
	if !ok {
		t.Fatal("the copy is not in the cache")
	}
	df.Discard()
	df.Close()
	c, err = tbl.Open(context.Background(), snap, f)
	if err != nil {
		t.Fatalf("open after the copy was evicted: %v", err)
	}
	if IsCopy(c) {
		t.Fatal("an evicted copy is served")
	}
	if got := readAll(t, c); !bytes.Equal(got, want) {
		t.Fatal("the composite after eviction serves other bytes")
	}
	c.Close()
}

func copyKeysData(key string) string {
	d, _ := copyKeys(key)
	return d
}

// rewriteKey is the key of f's rewrite.
func rewriteKey(t *testing.T, tbl *Table, snap *delta.Snapshot, f *delta.LiveFile) string {
	t.Helper()
	_, p, key, err := tbl.deriveKeyed(context.Background(), snap, f)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	return key
}

// Close waits for the copies being built: once it returns, no copy work
// runs (the mount closes the disk cache right after), whether the copy
// was finished or cancelled.
func TestCloseWaitsForCopies(t *testing.T) {
	tbl, snap, f := dvFile(t)
	smallCopies(t, tbl)
	for range 2 { // the second open starts the copy
		c, err := tbl.Open(context.Background(), snap, f)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	tbl.Close()
	tbl.copies.mu.Lock()
	n := len(tbl.copies.busy)
	tbl.copies.mu.Unlock()
	if n != 0 {
		t.Errorf("%d copies still at work after Close", n)
	}
}

// A copy an earlier mount built serves a later mount's first open (after
// a check of its bytes against its sum), and its size comes from the sum:
// a stat reads no patch.
func TestCopyOfAnEarlierMountServesTheFirstOpen(t *testing.T) {
	tbl, snap, f := dvFile(t)
	smallCopies(t, tbl)
	cp := openUntilCopy(t, tbl, snap, f)
	want := readAll(t, cp)
	cp.Close()
	// The patch gone (its key is the rewrite's): only the copy can answer.
	key := rewriteKey(t, tbl, snap, f)
	if pf, ok := tbl.cache.Lookup(key); ok {
		pf.Discard()
		pf.Close()
	}
	resetCopies(t, tbl)  // as a new process knows nothing of it
	tbl.verdicts.clear() // nor of its size
	n, err := tbl.Size(context.Background(), snap, f)
	if err != nil || n != int64(len(want)) {
		t.Fatalf("Size: %d, %v; want %d", n, err, len(want))
	}
	if _, ok := tbl.cache.Lookup(key); ok {
		t.Error("Size read the rewrite's patch although the copy's sum has the size")
	}
	c, err := tbl.Open(context.Background(), snap, f)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !IsCopy(c) {
		t.Fatal("the first open in a new process is served as a composite, not from the copy on disk")
	}
	if got := readAll(t, c); !bytes.Equal(got, want) {
		t.Fatal("the copy serves other bytes")
	}
}

// A copy whose build is still under way (its data renamed in place, its
// sum not written yet) is left alone by an open: served as a composite,
// not discarded for its missing sum.
func TestCopyBeingBuiltIsNotDiscarded(t *testing.T) {
	tbl, snap, f := dvFile(t)
	smallCopies(t, tbl)
	openUntilCopy(t, tbl, snap, f).Close()
	key := rewriteKey(t, tbl, snap, f)
	_, sumKey := copyKeys(key)
	if sf, ok := tbl.cache.Lookup(sumKey); ok {
		sf.Discard()
		sf.Close()
	}
	resetCopies(t, tbl)
	tbl.copies.mu.Lock()
	tbl.copies.busy[key] = true // as buildCopy holds it until the sum is written
	tbl.copies.mu.Unlock()
	c, err := tbl.Open(context.Background(), snap, f)
	tbl.copies.mu.Lock()
	delete(tbl.copies.busy, key)
	tbl.copies.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if IsCopy(c) {
		t.Error("a copy without its sum was served")
	}
	df, ok := tbl.cache.Lookup(copyKeysData(key))
	if !ok {
		t.Fatal("an open discarded the copy being built")
	}
	df.Close()
}

// levelsHandler records the level of each log record.
type levelsHandler struct{ levels *[]slog.Level }

func (h levelsHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h levelsHandler) Handle(_ context.Context, r slog.Record) error {
	*h.levels = append(*h.levels, r.Level)
	return nil
}
func (h levelsHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h levelsHandler) WithGroup(string) slog.Handler      { return h }

// A copy not built or not kept is a warning while the mount runs, an info
// line when the disk cache is full, and a debug line once Close stopped
// the table's background work (an unmount right after a file's second
// open loses nothing anybody needs to hear about).
func TestCopyNotKeptLevels(t *testing.T) {
	var levels []slog.Level
	tbl, _ := openFixture(t, "dat/basic_append", Options{Logger: slog.New(levelsHandler{&levels})})
	f := &delta.LiveFile{Key: "part-0.parquet"}
	tbl.copyNotKept(f, "not kept", errors.New("disk error"))
	tbl.copyNotBuilt(f, fmt.Errorf("write: %w", blobcache.ErrDiskFull))
	tbl.Close()
	tbl.copyNotKept(f, "not kept", context.Canceled)
	want := []slog.Level{slog.LevelWarn, slog.LevelInfo, slog.LevelDebug}
	if !slices.Equal(levels, want) {
		t.Errorf("levels %v, want %v", levels, want)
	}
}

// syncLog is a log buffer safe for the table's background work.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A copy whose sum was tampered with is refused as a damaged local cache
// file, named with its path, table, version and file, never as a corrupt
// Delta log: a sum whose size disagrees with its copy is discarded by the
// stat that reads it (which then sizes the rewrite), and a copy and sum
// that agree on a wrong size fail the open that checks the copy
// (CacheFileError), after which stat and open give the rewrite's bytes.
func TestCopySumTamperedIsADamagedCacheFile(t *testing.T) {
	var logs syncLog
	const fixture = "delta-kernel-rs/golden-dv-partitioned-with-checkpoint"
	dir := t.TempDir()
	opts := Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	tbl, snap := openFixtureIn(t, fixture, opts, dir)
	files, err := snap.LiveFiles()
	if err != nil {
		t.Fatal(err)
	}
	var f *delta.LiveFile
	for i := range files {
		if files[i].Add.DeletionVector != nil {
			f = &files[i]
			break
		}
	}
	smallCopies(t, tbl)
	cp := openUntilCopy(t, tbl, snap, f)
	want := readAll(t, cp)
	dataPath := cp.(*copyContent).df.Path()
	cp.Close()
	key := rewriteKey(t, tbl, snap, f)
	_, sumKey := copyKeys(key)
	tamper := func(size int64) {
		t.Helper()
		sf, ok := tbl.cache.Lookup(sumKey)
		if !ok {
			t.Fatal("no sum beside the copy")
		}
		path := sf.Path()
		sf.Close()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint64(b[4:], uint64(size))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		resetCopies(t, tbl) // as a new process knows nothing of it
		tbl.verdicts.clear()
	}
	named := func(msg string, path string) {
		t.Helper()
		for _, w := range []string{"damaged local cache file", path, "table t", fmt.Sprintf("version %d", snap.Version()), f.Key} {
			if !strings.Contains(msg, w) {
				t.Errorf("the message does not name %q:\n%s", w, msg)
			}
		}
		if strings.Contains(msg, "corrupt") {
			t.Errorf("the message blames the Delta log:\n%s", msg)
		}
	}

	// The sum's size tampered: the stat finds it, sizes the rewrite.
	tamper(int64(len(want)) + 7)
	if n, err := tbl.Size(context.Background(), snap, f); err != nil || n != int64(len(want)) {
		t.Fatalf("Size with a tampered sum: %d, %v; want %d", n, err, len(want))
	}
	named(logs.String(), dataPath)
	if _, ok := tbl.cache.Lookup(sumKey); ok {
		t.Error("the tampered sum is still in the cache")
	}
	c, err := tbl.Open(context.Background(), snap, f)
	if err != nil || IsCopy(c) {
		t.Fatalf("open after the tampered sum: copy=%v, %v", err == nil && IsCopy(c), err)
	}
	if got := readAll(t, c); !bytes.Equal(got, want) {
		t.Fatal("the composite serves other bytes")
	}
	c.Close()

	// The copy and its sum agree on a wrong size (as a new mount of the
	// cache finds them): the open that checks the copy refuses it.
	cp = openUntilCopy(t, tbl, snap, f)
	dataPath = cp.(*copyContent).df.Path()
	cp.Close()
	tamper(int64(len(want)) - 1)
	if err := os.Truncate(dataPath, int64(len(want))-1); err != nil {
		t.Fatal(err)
	}
	tbl, _ = openFixtureIn(t, fixture, opts, dir) // a new mount of the cache
	smallCopies(t, tbl)
	if n, err := tbl.Size(context.Background(), snap, f); err != nil || n != int64(len(want))-1 {
		t.Fatalf("Size with a copy and sum that agree: %d, %v; want their %d", n, err, len(want)-1)
	}
	_, err = tbl.Open(context.Background(), snap, f)
	var cfe *CacheFileError
	if !errors.As(err, &cfe) || !errors.Is(err, ErrDamagedCache) || errors.Is(err, delta.ErrCorruptLog) {
		t.Fatalf("open of a damaged copy whose size a stat gave: %v; want a CacheFileError, not ErrCorruptLog", err)
	}
	named(err.Error(), dataPath)
	if n, err := tbl.Size(context.Background(), snap, f); err != nil || n != int64(len(want)) {
		t.Fatalf("Size after the refusal: %d, %v; want the rewrite's %d", n, err, len(want))
	}
	c, err = tbl.Open(context.Background(), snap, f)
	if err != nil {
		t.Fatalf("open after the refusal: %v", err)
	}
	if got := readAll(t, c); !bytes.Equal(got, want) {
		t.Fatal("the open after the refusal serves other bytes")
	}
	c.Close()
}
