package integration

// A cache that can be changed behind the mount's back must never serve
// wrong bytes: entries overwritten, truncated or deleted on disk are
// noticed at the next open and rebuilt (with a log line); the cache dir
// removed while mounted breaks neither reads nor inbox creates.

import (
	"bytes"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// readTreeUncached reads every regular file under dir, dropping each from the page
// cache first so that the read reaches the mount.
func readTreeUncached(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		var b bytes.Buffer
		if _, err := b.ReadFrom(f); err != nil {
			return err
		}
		out[p] = b.Bytes()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// cacheEntries lists the derived files of a cache dir (named by a SHA-256).
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, err := hex.DecodeString(e.Name()); err == nil && len(e.Name()) == 64 {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// TestCacheEntriesChangedOnDisk: the rewritten (deletion vector) files of
// a table read once; then every cache entry is damaged on disk in turn
// (32 bytes overwritten in place, truncated, deleted, the whole cache dir
// removed), and the files read again must be the same bytes.
func TestCacheEntriesChangedOnDisk(t *testing.T) {
	cache := t.TempDir()
	var logs lockedBuffer
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "dv", URL: testenv.Fixture(t, fixtureDV)}}, CacheDir: cache,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	target, err := os.Readlink(filepath.Join(mnt, "dv", "@latest"))
	if err != nil {
		t.Fatal(err)
	}
	latest := filepath.Join(mnt, "dv", target)
	want := readTreeUncached(t, latest)
	if len(cacheEntries(t, cache)) == 0 {
		t.Fatalf("no cache entries after reading %d files", len(want))
	}
	damage := map[string]func(p string) error{
		"overwritten": func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt(bytes.Repeat([]byte{0xAB}, 32), 8)
			return err
		},
		"truncated": func(p string) error { return os.Truncate(p, 100) },
		"deleted":   os.Remove,
	}
	for _, how := range []string{"overwritten", "truncated", "deleted"} {
		for _, p := range cacheEntries(t, cache) {
			if err := damage[how](p); err != nil {
				t.Fatalf("%s %s: %v", how, p, err)
			}
		}
		got := readTreeUncached(t, latest)
		for p, w := range want {
			if !bytes.Equal(got[p], w) {
				t.Errorf("after the cache entries were %s: %s differs (%d bytes, want %d)", how, p, len(got[p]), len(w))
			}
		}
	}
	if !strings.Contains(logs.String(), "damaged or changed on disk") {
		t.Errorf("no log line about rebuilding damaged entries")
	}
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
	got := readTreeUncached(t, latest)
	for p, w := range want {
		if !bytes.Equal(got[p], w) {
			t.Errorf("after rm -rf of the cache dir: %s differs", p)
		}
	}
}

// TestCacheDirRemovedInboxStillWorks: rm -rf of the cache dir (which holds
// the inbox's staging dir) while mounted; the next drop still commits.
func TestCacheDirRemovedInboxStillWorks(t *testing.T) {
	cache := t.TempDir()
	root, tdir := mountCopy(t, fixtureAppend, mount.Config{CacheDir: cache})
	v := latestSnapshot(t, root).Version()
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
	data := parquetBytes(t, []basicRow{{ptr("after rm"), ptr[int64](1), nil}})
	if err := os.WriteFile(filepath.Join(tdir, "inbox", "after.parquet"), data, 0o644); err != nil {
		t.Fatalf("inbox drop after rm -rf of the cache dir: %v", err)
	}
	if got := latestSnapshot(t, root).Version(); got != v+1 {
		t.Errorf("version %d, want %d", got, v+1)
	}
}

// TestReadersHoldingFilesKeepCacheSize: readers hold files with deleted
// rows open in two tables of a mount whose --cache-size holds one patch.
// The disk cache never passes --cache-size (the second patch is served
// from memory, with the same rows), and an append through the inbox
// still commits (the cache grew past its limit and
// every inbox write failed with ENOSPC until the readers closed).
func TestReadersHoldingFilesKeepCacheSize(t *testing.T) {
	testenv.RequireFUSE(t)
	a, b := t.TempDir(), t.TempDir()
	rows, deleted := writeBigDVTable(t, a)
	writeBigDVTable(t, b)
	cache := t.TempDir()
	const limit = 4 << 20
	mnt := mountFS(t, mount.Config{CacheDir: cache, CacheSize: limit, NoPassthrough: true,
		Sources: []mount.Source{{Name: "a", URL: a}, {Name: "b", URL: b}}})
	derivedBytes := func() int64 {
		var n int64
		ents, _ := os.ReadDir(cache)
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
				n += fi.Size()
			}
		}
		return n
	}
	want := rows - int64(deleted.GetCardinality())
	var held [][]byte
	for _, table := range []string{"a", "b"} {
		p := filepath.Join(mnt, table, "@v0", "part-00000-big.parquet")
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close() // held open while the next is read and the inbox written
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, fi.Size())
		if _, err := f.ReadAt(data, 0); err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil || pf.NumRows() != want {
			t.Fatalf("%s: %v, %d rows; want %d", p, err, pf.NumRows(), want)
		}
		held = append(held, data)
		if n := derivedBytes(); n > limit {
			t.Fatalf("after opening %s: the cache dir holds %d bytes, --cache-size %d", p, n, limit)
		}
	}
	if !bytes.Equal(held[0], held[1]) {
		t.Error("the patch served from memory differs from the cached one")
	}
	data := parquetBytes(t, []copyRow{{ID: 1 << 40, Payload: []byte("appended")}})
	if err := os.WriteFile(filepath.Join(mnt, "a", "inbox", "more.parquet"), data, 0o644); err != nil {
		t.Fatalf("append while readers hold rewritten files open: %v", err)
	}
	if !eventually(5*time.Second, func() bool { _, err := os.Stat(filepath.Join(mnt, "a", "@v1")); return err == nil }) {
		t.Error("the append made no version 1")
	}
}
