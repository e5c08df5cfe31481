package serve

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/pqfile"
)

type compositeRow struct {
	ID   int64  `parquet:"id"`
	Name string `parquet:"name,dict"`
	Blob []byte `parquet:"blob"`
}

// compositeSource returns a snappy Parquet file of 4 row groups and the bitmap deleting a few rows
// of its second group.
func compositeSource(t *testing.T) ([]byte, *roaring64.Bitmap) {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[compositeRow](&buf, parquet.Compression(&parquet.Snappy), parquet.MaxRowsPerRowGroup(500))
	rows := make([]compositeRow, 2000)
	for i := range rows {
		rows[i] = compositeRow{ID: int64(i), Name: string(rune('a' + i%7)), Blob: bytes.Repeat([]byte{byte(i)}, i%50)}
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), roaring64.BitmapOf(501, 777, 998)
}

// entryBuild returns a cache build writing the composite entry of src without del, counting calls.
func entryBuild(src []byte, del *roaring64.Bitmap, calls *atomic.Int64) func(io.Writer) error {
	return func(w io.Writer) error {
		calls.Add(1)
		p, err := pqfile.NewPlan(bytes.NewReader(src), int64(len(src)), del, nil)
		if err != nil {
			return err
		}
		return pqfile.WriteEntry(w, p)
	}
}

// readComposite reads the whole output through the layout and the entry.
func readComposite(t *testing.T, l *pqfile.Layout, src []byte, df patchReader) []byte {
	t.Helper()
	c := &compositeContent{layout: l, src: &fileBytes{bytes.NewReader(src)}, entry: df}
	out := make([]byte, c.Size())
	if n, err := c.ReadAt(context.Background(), out, 0); n != len(out) || (err != nil && err != io.EOF) {
		t.Fatalf("read composite: %d of %d bytes, %v", n, len(out), err)
	}
	return out
}

// TestCompositeEntryMatchesRewrite checks that the composite served from a cache entry is
// byte-identical to pqfile.Rewrite's output.
func TestCompositeEntryMatchesRewrite(t *testing.T) {
	src, del := compositeSource(t)
	var want bytes.Buffer
	if _, err := pqfile.Rewrite(bytes.NewReader(src), int64(len(src)), del, nil, &want); err != nil {
		t.Fatal(err)
	}
	c := newTestCache(t, t.TempDir())
	m := NewTable("t", nil, c, Options{})
	var builds atomic.Int64
	l, df, err := m.entry(context.Background(), "k", int64(len(src)), entryBuild(src, del, &builds))
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	if got := readComposite(t, l, src, df); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("composite differs from Rewrite's output (%d vs %d bytes)", len(got), want.Len())
	}
	if l.PatchSize() >= int64(len(src))/2 {
		t.Errorf("patch of %d bytes for a %d-byte source with deletes in 1 of 4 groups", l.PatchSize(), len(src))
	}
}

// TestCompositeEntryWhenTheCacheIsFull builds a composite entry in a disk
// cache too small for its patch (as when readers hold the cache's files
// open): the patch is served from memory with the same bytes, charged to
// the uncached budget until closed, and the disk holds nothing of it; a
// patch past that budget fails, naming --cache-size.
func TestCompositeEntryWhenTheCacheIsFull(t *testing.T) {
	src, del := compositeSource(t)
	var want bytes.Buffer
	if _, err := pqfile.Rewrite(bytes.NewReader(src), int64(len(src)), del, nil, &want); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, err := blobcache.New(blobcache.Options{DiskDir: dir, DiskBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := NewTable("t", nil, c, Options{})
	var builds atomic.Int64
	l, p, err := m.entry(context.Background(), "k", int64(len(src)), entryBuild(src, del, &builds))
	if err != nil {
		t.Fatalf("entry with a full disk cache: %v", err)
	}
	if _, ok := p.(*heldPatch); !ok {
		t.Fatalf("patch is a %T, want one held in memory", p)
	}
	if held := m.caches.uncached.held.Load(); held < l.PatchSize() {
		t.Errorf("uncached budget holds %d bytes for a %d-byte patch", held, l.PatchSize())
	}
	if got := readComposite(t, l, src, p); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("composite from memory differs from Rewrite's output (%d vs %d bytes)", len(got), want.Len())
	}
	p.Close()
	p.Close()
	if held := m.caches.uncached.held.Load(); held != 0 {
		t.Errorf("uncached budget holds %d bytes once the patch is closed", held)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the full cache's dir holds %d files", len(ents))
	}
	m.caches.uncached.held.Store(uncachedPatchBytes) // the budget taken by other opens
	defer m.caches.uncached.held.Store(0)
	if _, _, err := m.entry(context.Background(), "k", int64(len(src)), entryBuild(src, del, &builds)); !errors.Is(err, blobcache.ErrDiskFull) || !strings.Contains(err.Error(), "--cache-size") {
		t.Errorf("entry past the memory budget: %v, want ErrDiskFull naming --cache-size", err)
	}
}

// TestCompositeEntryDamagedRebuilt damages a composite entry on disk and
// checks that a new process (new cache, new materializer) builds it again
// instead of serving it (the disk cache's check; its cases are in
// blobcache), while an intact entry is reused without a build.
func TestCompositeEntryDamagedRebuilt(t *testing.T) {
	src, del := compositeSource(t)
	for _, damaged := range []bool{false, true} {
		dir := t.TempDir()
		var builds atomic.Int64
		c1 := newTestCache(t, dir)
		l1, df, err := NewTable("t", nil, c1, Options{}).entry(context.Background(), "k", int64(len(src)), entryBuild(src, del, &builds))
		if err != nil {
			t.Fatal(err)
		}
		want := readComposite(t, l1, src, df)
		path := df.(*blobcache.DiskFile).Path()
		df.Close()
		c1.Close()
		if damaged {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)-30] ^= 0x10 // in the layout
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		c2 := newTestCache(t, dir)
		l2, df2, err := NewTable("t", nil, c2, Options{}).entry(context.Background(), "k", int64(len(src)), entryBuild(src, del, &builds))
		if err != nil {
			t.Fatal(err)
		}
		if got := readComposite(t, l2, src, df2); !bytes.Equal(got, want) {
			t.Fatalf("damaged %v: served bytes differ after restart", damaged)
		}
		df2.Close()
		if n := builds.Load() - 1; (n == 1) != damaged || n > 1 {
			t.Fatalf("damaged %v: %d rebuilds", damaged, n)
		}
	}
}

func newTestCache(t *testing.T, dir string) *blobcache.Cache {
	t.Helper()
	c, err := blobcache.New(blobcache.Options{DiskDir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fileBytes is an in-memory stored file.
type fileBytes struct{ r *bytes.Reader }

func (f *fileBytes) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return f.r.ReadAt(p, off)
}
func (f *fileBytes) Size() int64    { return f.r.Size() }
func (f *fileBytes) File() *os.File { return nil }
func (f *fileBytes) Close() error   { return nil }
