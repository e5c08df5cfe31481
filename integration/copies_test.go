package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

type copyRow struct {
	ID      int64  `parquet:"id"`
	Payload []byte `parquet:"payload"`
}

// plainName is the data file of writeBigDVTable's table without a
// deletion vector: the same bytes, served as stored.
const plainName = "part-00001-plain.parquet"

// writeBigDVTable writes a table of a 3 MiB data file in 4 row groups
// whose deletion vector deletes every 7th row, and of the same file
// without one (plainName), and returns the first file's rows and deleted
// rows.
func writeBigDVTable(t *testing.T, root string) (rows int64, deleted *roaring64.Bitmap) {
	t.Helper()
	const perGroup, groups = 3000, 4
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[copyRow](&buf, parquet.MaxRowsPerRowGroup(perGroup))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range int64(perGroup * groups) {
		p := make([]byte, 256)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		if _, err := w.Write([]copyRow{{ID: i, Payload: p}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	name := "part-00000-big.parquet"
	for _, n := range []string{name, plainName} {
		if err := os.WriteFile(filepath.Join(root, n), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	deleted = roaring64.New()
	for r := uint64(0); r < perGroup*groups; r += 7 {
		deleted.Add(r)
	}
	file, recs, err := delta.EncodeDVFile([]*roaring64.Bitmap{deleted})
	if err != nil {
		t.Fatal(err)
	}
	uuid := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	if err := os.WriteFile(filepath.Join(root, "deletion_vector_01020304-0506-0708-090a-0b0c0d0e0f10.bin"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	off := recs[0].Offset
	dv := &delta.DeletionVector{StorageType: "u", PathOrInlineDV: delta.Z85Encode(uuid[:]), Offset: &off,
		SizeInBytes: recs[0].SizeInBytes, Cardinality: recs[0].Cardinality}
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},` +
		`{"name":"payload","type":"binary","nullable":false,"metadata":{}}]}`
	var log bytes.Buffer
	enc := json.NewEncoder(&log)
	for _, a := range []any{
		map[string]any{"commitInfo": map[string]any{"timestamp": 1767225600000, "operation": "WRITE"}},
		map[string]any{"protocol": map[string]any{"minReaderVersion": 3, "minWriterVersion": 7,
			"readerFeatures": []string{"deletionVectors"}, "writerFeatures": []string{"deletionVectors"}}},
		map[string]any{"metaData": map[string]any{"id": "copies", "format": map[string]any{"provider": "parquet", "options": map[string]string{}},
			"schemaString": schema, "partitionColumns": []string{}, "configuration": map[string]string{"delta.enableDeletionVectors": "true"}, "createdTime": 1767225600000}},
		map[string]any{"add": &delta.Add{Path: name, PartitionValues: map[string]*string{}, Size: int64(buf.Len()),
			ModificationTime: 1767225600000, DataChange: true, DeletionVector: dv}},
		map[string]any{"add": &delta.Add{Path: plainName, PartitionValues: map[string]*string{}, Size: int64(buf.Len()),
			ModificationTime: 1767225600000, DataChange: true}},
	} {
		if err := enc.Encode(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "_delta_log", fmt.Sprintf("%020d.json", 0)), log.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return perGroup * groups, deleted
}

// passthroughOpens scrapes the mount's count of opens served by kernel
// passthrough.
func passthroughOpens(t *testing.T, srv *mount.Server) int {
	return metricValue(t, srv, `deltafs_file_opens_total\{path="passthrough"\}`)
}

// A file with deleted rows read again and again is, from its second open,
// given a materialized copy that later opens pass through to the kernel:
// every read returns the same bytes, the table's rows without the deleted
// ones, and the reads after the copy are passthrough opens. A second mount
// of the same cache finds the copy on disk and passes it through (the check
// of a copy another process built is serve's TestCopyDamagedOrEvicted).
func TestRereadOfRewrittenFilePassesThrough(t *testing.T) {
	testenv.RequireFUSE(t)
	root := t.TempDir()
	rows, deleted := writeBigDVTable(t, root)
	cache := t.TempDir()
	mountIt := func() (*mount.Server, string) {
		cfg := mount.Config{Mountpoint: t.TempDir(), CacheDir: cache, ReadOnly: true,
			Logger:  slog.New(slog.NewTextHandler(testWriter{t}, nil)),
			Sources: []mount.Source{{Name: "t", URL: root}}}
		srv, err := mount.Mount(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return srv, cfg.Mountpoint
	}
	srv, mnt := mountIt()
	// The stored file passes through where the kernel grants passthrough.
	if _, err := os.ReadFile(filepath.Join(mnt, "t", "@latest", plainName)); err != nil {
		t.Fatal(err)
	}
	plainPT := passthroughOpens(t, srv)
	if plainPT == 0 {
		srv.Unmount()
		testenv.Skip(t, "the kernel does not grant FUSE passthrough to this mount")
	}
	path := filepath.Join(mnt, "t", "@latest", "part-00000-big.parquet")
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkLiveRows(t, first, rows, deleted)
	if n := passthroughOpens(t, srv) - plainPT; n != 0 {
		t.Fatalf("%d passthrough opens of a rewritten file before any copy", n)
	}
	deadline := time.Now().Add(20 * time.Second)
	for passthroughOpens(t, srv) == plainPT {
		if time.Now().After(deadline) {
			t.Fatal("no passthrough open 20 s into re-reading a rewritten file")
		}
		again, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, first) {
			t.Fatal("a re-read returned other bytes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	again, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(again, first) {
		t.Fatalf("a read through the copy returned other bytes (%v)", err)
	}
	if err := srv.Unmount(); err != nil {
		t.Fatal(err)
	}

	// A new mount of the same cache: the copy on disk is used.
	srv, mnt = mountIt()
	t.Cleanup(func() { srv.Unmount() })
	path = filepath.Join(mnt, "t", "@latest", "part-00000-big.parquet")
	deadline = time.Now().Add(20 * time.Second)
	for passthroughOpens(t, srv) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the second mount never passed the copy through")
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(b, first) {
			t.Fatalf("the second mount read other bytes (%v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkLiveRows checks that the Parquet bytes b hold the ids 0..rows-1
// except the deleted ones, in order.
func checkLiveRows(t *testing.T, b []byte, rows int64, deleted *roaring64.Bitmap) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]copyRow, f.NumRows())
	r := parquet.NewGenericReader[copyRow](f)
	n, _ := r.Read(got)
	if int64(n) != rows-int64(deleted.GetCardinality()) {
		t.Fatalf("%d rows served, want %d", n, rows-int64(deleted.GetCardinality()))
	}
	want := int64(0)
	for _, row := range got[:n] {
		for deleted.Contains(uint64(want)) {
			want++
		}
		if row.ID != want {
			t.Fatalf("row id %d served where %d was expected", row.ID, want)
		}
		want++
	}
}

// copySumFile finds the sum of the one materialized copy under the cache
// dir (16 bytes starting "dfc1") and returns its path and the size it
// records; "" when there is none yet.
func copySumFile(t *testing.T, cache string) (string, int64) {
	t.Helper()
	var found string
	var size int64
	filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err != nil || fi.Size() != 16 {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && string(b[:4]) == "dfc1" {
			found, size = p, int64(binary.LittleEndian.Uint64(b[4:12]))
		}
		return nil
	})
	return found, size
}

// A copy and its sum tampered with alike (both one byte shorter), found by
// a new mount whose stat took its size from the sum: the open that checks
// the copy fails with EIO naming a damaged local cache file (its path,
// table, version and file), not a corrupt Delta log, and the file then
// stats and reads as its rewrite.
func TestTamperedCopyIsADamagedCacheFile(t *testing.T) {
	testenv.RequireFUSE(t)
	root := t.TempDir()
	writeBigDVTable(t, root)
	cache := t.TempDir()
	var logs syncBuffer
	mountIt := func() (*mount.Server, string) {
		cfg := mount.Config{Mountpoint: t.TempDir(), CacheDir: cache, ReadOnly: true,
			Logger:  slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, &logs), nil)),
			Sources: []mount.Source{{Name: "t", URL: root}}}
		srv, err := mount.Mount(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return srv, cfg.Mountpoint
	}
	srv, mnt := mountIt()
	path := filepath.Join(mnt, "t", "@v0", "part-00000-big.parquet")
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sum string
	for deadline := time.Now().Add(20 * time.Second); sum == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no materialized copy 20 s into re-reading a rewritten file")
		}
		if _, err := os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
		sum, _ = copySumFile(t, cache)
	}
	if err := srv.Unmount(); err != nil {
		t.Fatal(err)
	}
	// The copy: the file of the cache holding exactly the served bytes.
	var copyPath string
	filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if fi, ierr := os.Stat(p); err == nil && ierr == nil && !d.IsDir() && fi.Size() == int64(len(want)) {
			if b, rerr := os.ReadFile(p); rerr == nil && bytes.Equal(b, want) {
				copyPath = p
			}
		}
		return nil
	})
	if copyPath == "" {
		t.Fatal("no copy of the served bytes in the cache dir")
	}
	if err := os.Truncate(copyPath, int64(len(want))-1); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(b[4:12], uint64(len(want)-1))
	if err := os.WriteFile(sum, b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(cache, "verdicts.journal")) // the size must come from the sum

	srv, mnt = mountIt()
	t.Cleanup(func() { srv.Unmount() })
	path = filepath.Join(mnt, "t", "@v0", "part-00000-big.parquet")
	if fi, err := os.Stat(path); err != nil || fi.Size() != int64(len(want))-1 {
		t.Fatalf("stat with a tampered copy and sum: %v, %v; want the sum's %d (the test assumes the stat reads it)", fi, err, len(want)-1)
	}
	mark := len(logs.String())
	_, err = os.ReadFile(path)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("read of the tampered copy: %v, want EIO", err)
	}
	l := logs.String()[mark:]
	for _, w := range []string{"damaged local cache file", copyPath, "table t", "version 0", "part-00000-big.parquet"} {
		if !strings.Contains(l, w) {
			t.Errorf("the log does not name %q:\n%s", w, l)
		}
	}
	if strings.Contains(l, "corrupt") {
		t.Errorf("the log blames the Delta log:\n%s", l)
	}
	ok := eventually(10*time.Second, func() bool {
		if f, err := os.Open(path); err == nil {
			f.Close()
		}
		fi, err := os.Stat(path)
		return err == nil && fi.Size() == int64(len(want))
	})
	if !ok {
		t.Fatal("the file never stats as its rewrite after the damaged copy")
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read after the damaged copy: %d bytes, %v; want the rewrite's %d", len(got), err, len(want))
	}
}
