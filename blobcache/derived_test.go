package blobcache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// writeBuild returns a build writing data in small pieces and counting calls.
func writeBuild(data []byte, calls *atomic.Int64) func(io.Writer) error {
	return func(w io.Writer) error {
		calls.Add(1)
		for p := data; len(p) > 0; {
			n, err := w.Write(p[:min(len(p), 1000)])
			if err != nil {
				return err
			}
			p = p[n:]
		}
		return nil
	}
}

// checkFile asserts f holds exactly data, through ReadAt and through Path.
func checkFile(t *testing.T, f *DiskFile, data []byte) {
	t.Helper()
	got := make([]byte, len(data)+1)
	n, err := f.ReadAt(got, 0)
	if n != len(data) || err != io.EOF || !bytes.Equal(got[:n], data) || f.Size() != int64(len(data)) {
		t.Fatalf("ReadAt = %d, %v (size %d); want the %d built bytes and EOF", n, err, f.Size(), len(data))
	}
	onDisk, err := os.ReadFile(f.Path())
	if err != nil || !bytes.Equal(onDisk, data) {
		t.Fatalf("file at Path(): %d bytes, %v; want the built bytes", len(onDisk), err)
	}
}

func TestDerivedWithoutDiskDir(t *testing.T) {
	c := newCache(t, Options{})
	build := func(io.Writer) error { return nil }
	if _, err := c.Derived(context.Background(), "k", build); !errors.Is(err, ErrNoDiskDir) {
		t.Fatalf("Derived without DiskDir = %v, want ErrNoDiskDir", err)
	}
}

func TestDerivedBuildsOnceForConcurrentCallers(t *testing.T) {
	c := newCache(t, Options{DiskDir: t.TempDir()})
	data := randomBytes(300_000, 21)
	var builds atomic.Int64
	slow := func(w io.Writer) error {
		time.Sleep(20 * time.Millisecond) // let the other callers pile up
		return writeBuild(data, &builds)(w)
	}
	var wg sync.WaitGroup
	files := make([]*DiskFile, 16)
	for i := range files {
		wg.Go(func() {
			f, err := c.Derived(context.Background(), "table/part-1.parquet#dv=abc", slow)
			if err != nil {
				t.Errorf("Derived: %v", err)
				return
			}
			files[i] = f
		})
	}
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Fatalf("16 concurrent callers ran %d builds, want 1", n)
	}
	for _, f := range files {
		if f != nil {
			checkFile(t, f, data)
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s := c.Stats(); s.DiskBytes != int64(len(data)) || s.Builds != 1 {
		t.Fatalf("stats: %+v; want one build of %d bytes", s, len(data))
	}
}

func TestDerivedSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	data := randomBytes(5000, 22)
	var builds atomic.Int64
	c := newCache(t, Options{DiskDir: dir})
	f, err := c.Derived(context.Background(), "key", writeBuild(data, &builds))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	c.Close()

	c2 := newCache(t, Options{DiskDir: dir})
	if s := c2.Stats(); s.DiskBytes != int64(len(data)) {
		t.Fatalf("reopened cache accounts %d bytes, want %d", s.DiskBytes, len(data))
	}
	f, err = c2.Derived(context.Background(), "key", writeBuild(nil, &builds))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	checkFile(t, f, data)
	if n := builds.Load(); n != 1 {
		t.Fatalf("builds = %d after restart, want 1: the file on disk must be reused", n)
	}
}

func TestDerivedEvictionRespectsOpenFiles(t *testing.T) {
	dir := t.TempDir()
	c := newCache(t, Options{DiskDir: dir, DiskBytes: 250})
	var builds atomic.Int64
	open := func(key string) *DiskFile {
		t.Helper()
		f, err := c.Derived(context.Background(), key, writeBuild(randomBytes(100, uint64(len(key))), &builds))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	exists := func(f *DiskFile) bool {
		_, err := os.Stat(f.Path())
		return err == nil
	}
	a := open("a")
	b := open("bb")
	b.Close()
	c3 := open("ccc") // 300 bytes > 250: b goes (a is older but open)
	if !exists(a) || exists(b) || !exists(c3) {
		t.Fatalf("after 3 files: a %v, b %v, c %v; want b evicted", exists(a), exists(b), exists(c3))
	}
	a.Close()
	c3.Close()
	d := open("dddd") // a is now the least recently used closed file
	defer d.Close()
	if exists(a) || !exists(c3) || !exists(d) {
		t.Fatalf("after closing a: a %v, c %v, d %v; want a evicted", exists(a), exists(c3), exists(d))
	}
	if s := c.Stats(); s.DiskBytes != 200 || s.DiskEvictions != 2 {
		t.Fatalf("stats: %+v; want 200 bytes held after 2 evictions", s)
	}

	// A file bigger than the whole budget is not built: the disk cache
	// never holds more than its limit.
	if big, err := c.Derived(context.Background(), "big", writeBuild(randomBytes(1000, 3), &builds)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("an oversized build: %v, %v; want ErrDiskFull", big, err)
	}
	if names := testenv.DirNames(t, dir); len(names) != 1 || !exists(d) {
		t.Fatalf("after the refused build: %v, want d's file alone (c's was evicted to make room)", names)
	}
	if s := c.Stats(); s.DiskBytes > 250 {
		t.Fatalf("disk bytes %d > limit 250 with no file open", s.DiskBytes)
	}
}

func TestDerivedFailingBuildLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	c := newCache(t, Options{DiskDir: dir})
	failing := func(w io.Writer) error {
		w.Write(make([]byte, 10_000))
		return errInjected
	}
	if _, err := c.Derived(context.Background(), "k", failing); !errors.Is(err, errInjected) {
		t.Fatalf("Derived with a failing build = %v, want the build's error", err)
	}
	if names := testenv.DirNames(t, dir); len(names) != 0 {
		t.Fatalf("a failed build left %v", names)
	}
	var builds atomic.Int64
	f, err := c.Derived(context.Background(), "k", writeBuild([]byte("ok"), &builds))
	if err != nil {
		t.Fatalf("retry after a failed build: %v", err)
	}
	defer f.Close()
	checkFile(t, f, []byte("ok"))
}

func TestDerivedCancelledLeaderHandsOver(t *testing.T) {
	c := newCache(t, Options{DiskDir: t.TempDir()})
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	leaderErr := make(chan error, 1)
	go func() {
		_, err := c.Derived(ctx, "k", func(w io.Writer) error {
			close(started)
			w.Write([]byte("partial"))
			<-ctx.Done()
			return ctx.Err()
		})
		leaderErr <- err
	}()
	<-started
	data := []byte("built by the waiter")
	var builds atomic.Int64
	waiter := make(chan *DiskFile, 1)
	go func() {
		f, err := c.Derived(context.Background(), "k", writeBuild(data, &builds))
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		waiter <- f
	}()
	time.Sleep(20 * time.Millisecond) // the waiter is now waiting on the leader's build
	cancel()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v, want context.Canceled", err)
	}
	f := <-waiter
	if f == nil {
		t.FailNow()
	}
	defer f.Close()
	checkFile(t, f, data)
	if n := builds.Load(); n != 1 {
		t.Fatalf("waiter builds = %d, want 1", n)
	}
}

func TestNewCleansTempLeftovers(t *testing.T) {
	dir := t.TempDir()
	kept := fileName("kept")
	for name, content := range map[string]string{
		tmpPrefix + kept + "-123": "partial build from a crash",
		kept:                      "complete",
		"notes.txt":               "not ours",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := newCache(t, Options{DiskDir: dir})
	if got, want := testenv.DirNames(t, dir), []string{kept, "notes.txt"}; !slices.Equal(got, want) {
		t.Fatalf("files after New: %v, want %v", got, want)
	}
	if s := c.Stats(); s.DiskBytes != int64(len("complete")) {
		t.Fatalf("DiskBytes = %d, want %d", s.DiskBytes, len("complete"))
	}
}

func TestNewEvictsDownToLimit(t *testing.T) {
	dir := t.TempDir()
	old, young := fileName("old"), fileName("young")
	for i, name := range []string{old, young} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, 100), 0o644); err != nil {
			t.Fatal(err)
		}
		mtime := time.Now().Add(time.Duration(i-2) * time.Hour)
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	newCache(t, Options{DiskDir: dir, DiskBytes: 150})
	if got := testenv.DirNames(t, dir); !slices.Equal(got, []string{young}) {
		t.Fatalf("files after New with a smaller budget: %v, want only the most recent", got)
	}
}
