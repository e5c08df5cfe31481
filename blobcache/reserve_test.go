package blobcache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hookRemove replaces removeFile for the test.
func hookRemove(t *testing.T, fn func(path string) error) {
	t.Helper()
	old := removeFile
	removeFile = fn
	t.Cleanup(func() { removeFile = old })
}

// fill builds n closed files of size bytes in c, named k0..k{n-1}.
func fill(t *testing.T, c *Cache, n, size int) {
	t.Helper()
	var builds atomic.Int64
	for i := range n {
		f, err := c.Derived(context.Background(), "k"+string(rune('0'+i)), writeBuild(randomBytes(size, uint64(i)), &builds))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// TestReserveUnlinksOutsideTheLock checks that the files a Reserve
// evicts are deleted without the cache mutex held (a slow disk would
// otherwise stall every open and every inbox write behind one unlink),
// and that Reserve still returns only once they are gone.
func TestReserveUnlinksOutsideTheLock(t *testing.T) {
	c := newCache(t, Options{DiskDir: t.TempDir(), DiskBytes: 1000})
	fill(t, c, 5, 200)
	d := c.disk
	var underLock, removed atomic.Int64
	release, entered := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hookRemove(t, func(path string) error {
		if d.mu.TryLock() {
			d.mu.Unlock()
		} else {
			underLock.Add(1)
		}
		once.Do(func() { close(entered) })
		<-release // a slow disk
		removed.Add(1)
		return os.Remove(path)
	})
	done := make(chan error, 1)
	go func() { done <- c.Reserve(500) }() // evicts 3 of the 5 files
	<-entered
	// While the unlink is stuck, the cache answers: an open of a file
	// still cached takes the mutex.
	var stats Stats
	got := make(chan error, 1)
	go func() {
		f, err := c.Derived(context.Background(), "k4", func(io.Writer) error { return errors.New("k4 is cached") })
		if err == nil {
			f.Close()
		}
		stats = c.Stats()
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("open of a cached file during an eviction: %v", err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("an open blocked while an evicted file was being deleted: the unlink runs under the cache mutex")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Reserve(500) with 1000 bytes of closed files: %v", err)
	}
	if n := underLock.Load(); n > 0 {
		t.Errorf("%d files deleted with the cache mutex held", n)
	}
	if removed.Load() != 3 {
		t.Errorf("Reserve returned after %d unlinks, want 3", removed.Load())
	}
	if stats.DiskBytes > 500 {
		t.Errorf("while the unlinks ran, the cache counted %d bytes: the evicted files' bytes are not freed first", stats.DiskBytes)
	}
	if s := c.Stats(); s.DiskBytes != 400 || s.DiskEvictions != 3 {
		t.Errorf("after Reserve: %+v, want 400 bytes, 3 evictions", s)
	}
}

// TestReserveSkipsOpenFiles checks that files held open are not in the
// eviction order (a Reserve over the limit walked past every open file
// each time, under the lock, on every growing inbox write), that a
// Reserve they leave no room for fails, and that they are evicted once
// closed.
func TestReserveSkipsOpenFiles(t *testing.T) {
	c := newCache(t, Options{DiskDir: t.TempDir(), DiskBytes: 1000})
	var builds atomic.Int64
	var open []*DiskFile
	for i := range 8 {
		f, err := c.Derived(context.Background(), "open"+string(rune('0'+i)), writeBuild(randomBytes(100, uint64(i)), &builds))
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, f)
	}
	fill(t, c, 2, 100)
	d := c.disk
	check := func(what string, idle int) {
		t.Helper()
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.lru.Len() != idle {
			t.Errorf("%s: %d files in the eviction order, want the %d not open", what, d.lru.Len(), idle)
		}
	}
	check("8 open, 2 closed", 2)
	if err := c.Reserve(300); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Reserve(300) with 800 of 1000 bytes held open: %v, want ErrDiskFull", err)
	}
	check("after the refused Reserve", 0)
	if err := c.Reserve(200); err != nil {
		t.Fatalf("Reserve(200) with 800 of 1000 bytes held open: %v", err)
	}
	for _, f := range open[:4] {
		f.Close()
	}
	check("4 closed at the limit", 4)
	if err := c.Reserve(100); err != nil { // one closed file goes
		t.Fatalf("Reserve(100) with 4 files closed: %v", err)
	}
	check("after evicting one", 3)
	if s := c.Stats(); s.DiskBytes != 700 || s.DiskEvictions != 3 { // 2 went at the refused Reserve
		t.Errorf("after Reserve(100): %+v, want 700 bytes after 3 evictions", s)
	}
	c.Release(300)
	for _, f := range open[4:] {
		f.Close()
	}
	check("all closed", 7)
}

// TestEvictionDoesNotDeleteARebuild checks the race that unlinking under
// the lock used to prevent: a file evicted while its key is built again
// must not take the new file with it (the build waits for the unlink
// before renaming its file into place).
func TestEvictionDoesNotDeleteARebuild(t *testing.T) {
	c := newCache(t, Options{DiskDir: t.TempDir(), DiskBytes: 1000})
	fill(t, c, 1, 600) // "k0"
	d := c.disk
	path := d.path(fileName("k0"))
	release := make(chan struct{})
	var once sync.Once
	entered := make(chan struct{})
	hookRemove(t, func(p string) error {
		if p == path {
			once.Do(func() { close(entered) })
			<-release
		}
		return os.Remove(p)
	})
	go c.Reserve(600) // evicts k0; its unlink is stuck
	<-entered
	data := randomBytes(300, 99)
	built := make(chan struct{})
	type result struct {
		f   *DiskFile
		err error
	}
	res := make(chan result, 1)
	go func() {
		f, err := c.Derived(context.Background(), "k0", func(w io.Writer) error {
			_, err := w.Write(data)
			close(built)
			return err
		})
		res <- result{f, err}
	}()
	select {
	case <-built:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the rebuild blocked behind the eviction's unlink: it runs under the cache mutex")
	}
	// Without the wait, the rename lands now, before the stuck unlink.
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		if fi, err := os.Stat(path); err == nil && fi.Size() == int64(len(data)) {
			close(release)
			t.Fatal("the rebuilt file was renamed into place while the eviction's unlink of the same name was pending")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.f.Close()
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the rebuilt file after the eviction's unlink: %d bytes, %v; want its %d bytes", len(got), err, len(data))
	}
}

// dirBytes is what the files of dir take, as du would count them (file
// sizes; open files unlinked are gone from the listing, so the test keeps
// none).
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}

// TestOpenFilesKeepTheDiskWithinLimit holds derived files open, as
// readers of rewritten files do, and keeps building: the files on disk
// never pass the limit (builds past it fail with ErrDiskFull while being
// written, leaving nothing), and the headroom kept for Reserve still fits
// a staged upload whatever is open (readers pushed the
// cache past --cache-size, then every inbox write failed).
func TestOpenFilesKeepTheDiskWithinLimit(t *testing.T) {
	dir := t.TempDir()
	const limit, headroom = 4000, 1000
	c := newCache(t, Options{DiskDir: dir, DiskBytes: limit, Headroom: headroom})
	var builds atomic.Int64
	var open []*DiskFile
	defer func() {
		for _, f := range open {
			f.Close()
		}
	}()
	refused := 0
	for i := range 10 {
		key := "k" + string(rune('a'+i))
		f, err := c.Derived(context.Background(), key, writeBuild(randomBytes(700, uint64(i)), &builds))
		switch {
		case errors.Is(err, ErrDiskFull):
			refused++
		case err != nil:
			t.Fatal(err)
		default:
			open = append(open, f)
		}
		if n := dirBytes(t, dir); n > limit-headroom {
			t.Fatalf("after build %d: %d bytes on disk, derived files may take %d", i, n, limit-headroom)
		}
	}
	if len(open) != (limit-headroom)/700 || refused != 10-len(open) {
		t.Fatalf("%d files open, %d refused; want %d open", len(open), refused, (limit-headroom)/700)
	}
	// The inbox's headroom fits, and past the limit a Reserve is refused.
	if err := c.Reserve(headroom); err != nil {
		t.Fatalf("Reserve of the headroom with every derived file open: %v", err)
	}
	if err := c.Reserve(limit); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Reserve past the limit: %v, want ErrDiskFull", err)
	}
	// What is reserved beyond the headroom is taken from closed files.
	for _, f := range open {
		f.Close()
	}
	open = nil
	if err := c.Reserve(limit - 2*headroom); err != nil {
		t.Fatalf("Reserve with the derived files closed: %v", err)
	}
	if n := dirBytes(t, dir); n > limit-(limit-headroom) {
		t.Fatalf("%d bytes of derived files left beside %d reserved, limit %d", n, limit-headroom, limit)
	}
	if _, err := c.Derived(context.Background(), "late", writeBuild(randomBytes(1500, 99), &builds)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("a build past what Reserve left: %v, want ErrDiskFull", err)
	}
	c.Release(limit - headroom)
	f, err := c.Derived(context.Background(), "late", writeBuild(randomBytes(1500, 99), &builds))
	if err != nil {
		t.Fatalf("a build once the reservations are released: %v", err)
	}
	open = append(open, f)
}

// TestLookupOfAnOpenFile looks a file up while it is open (a copy passed
// through to one reader while a second opens it): it used to move the
// open entry's nil LRU element and panic, which the mount turned into
// EIO for the second reader. Both opens read it; closed, it is evictable.
func TestLookupOfAnOpenFile(t *testing.T) {
	dir := t.TempDir()
	c := newCache(t, Options{DiskDir: dir, DiskBytes: 1000})
	var builds atomic.Int64
	data := randomBytes(300, 1)
	f1, err := c.Derived(context.Background(), "copy", writeBuild(data, &builds))
	if err != nil {
		t.Fatal(err)
	}
	f2, ok := c.Lookup("copy")
	if !ok {
		t.Fatal("Lookup of an open file: not found")
	}
	f3, ok := c.Lookup("copy")
	if !ok {
		t.Fatal("second Lookup of an open file: not found")
	}
	for _, f := range []*DiskFile{f1, f2, f3} {
		checkFile(t, f, data)
	}
	f1.Close()
	f2.Close()
	if err := c.Reserve(900); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Reserve while a Lookup holds the file: %v, want ErrDiskFull", err)
	}
	f3.Close()
	if err := c.Reserve(900); err != nil {
		t.Fatalf("Reserve once every open is closed: %v (the file was not evictable)", err)
	}
}
