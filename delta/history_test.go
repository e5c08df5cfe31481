package delta

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/scalegen"
)

// countingList is a dirStore that counts its listings.
type countingList struct {
	dirStore
	lists *atomic.Int64
}

func (c countingList) List(ctx context.Context, dir, from string) ([]ObjectInfo, error) {
	c.lists.Add(1)
	return c.dirStore.List(ctx, dir, from)
}

// Reading the history in chunks, as a reader of _history.jsonl does, lists
// the log once, not once a chunk: a listing of a long local log reads its
// whole directory (100,000 commits read in 512-version chunks took 134 s).
func TestHistoryChunksListOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: dir, Commits: 600, FilesPerCommit: 1}); err != nil {
		t.Fatal(err)
	}
	var lists atomic.Int64
	tbl := Open(countingList{dirStore{dir}, &lists}, Options{})
	ctx := context.Background()
	latest, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := lists.Load()
	n := 0
	for from := int64(0); from <= latest.Version(); from += 50 {
		if err := tbl.HistoryEach(ctx, from, min(from+49, latest.Version()), func(CommitSummary) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if n != 600 {
		t.Fatalf("%d summaries, want 600", n)
	}
	if got := lists.Load() - before; got > 1 {
		t.Errorf("12 chunks of history listed the log %d times, want at most once", got)
	}
}

// countingBytes is a dirStore that counts the bytes its ReadRange serves.
type countingBytes struct {
	dirStore
	n *atomic.Int64
}

func (c countingBytes) ReadRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	rc, err := c.dirStore.ReadRange(ctx, key, off, length)
	if err != nil {
		return nil, err
	}
	return countingReader{rc, c.n}, nil
}

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}

// The history of a large commit reads only its head when the commitInfo
// comes first, as writers put it, and still finds a commitInfo written
// last (read whole).
func TestHistoryReadsTheHeadOfLargeCommits(t *testing.T) {
	var adds []string
	for i := range 5000 {
		adds = append(adds, addLine(fmt.Sprintf("part-%05d.parquet", i), ""))
	}
	info := func(op string) string {
		return `{"commitInfo":{"timestamp":1700000000000,"operation":"` + op + `","operationParameters":{"mode":"Append"}}}`
	}
	root := writeLog(t, map[int64][]string{
		0: append(header(), info("CREATE TABLE")),
		1: append([]string{info("FIRST")}, adds...),
		2: append(slices.Clone(adds), info("LAST")),
	})
	ctx := context.Background()
	// A checkpoint at the last version, so that the snapshot the history
	// starts from reads (and caches) no commit.
	snap, err := Open(dirStore{root}, Options{}).Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCheckpoint(ctx, dirStore{root}, snap); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	tbl := Open(countingBytes{dirStore{root}, &n}, Options{})
	if _, err := tbl.Latest(ctx); err != nil {
		t.Fatal(err)
	}
	size := func(v int64) int64 {
		fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(CommitKey(v))))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	for _, c := range []struct {
		v       int64
		op      string
		maxRead int64
	}{{1, "FIRST", historyPrefix}, {2, "LAST", historyPrefix + size(2)}} {
		n.Store(0)
		var got []CommitSummary
		err := tbl.HistoryEach(ctx, c.v, c.v, func(s CommitSummary) error { got = append(got, s); return nil })
		if err != nil || len(got) != 1 || got[0].Operation != c.op {
			t.Fatalf("v%d: %+v %v, want operation %s", c.v, got, err, c.op)
		}
		if read := n.Load(); read > c.maxRead {
			t.Errorf("v%d (%d bytes): history read %d bytes, want at most %d", c.v, size(c.v), read, c.maxRead)
		}
	}
}

// HistorySize is the length of the lines HistoryEach's summaries give
// (AppendLine), and once a version's in-commit timestamp has been read
// (an ls -l of the table reads them all) its line costs no read again.
func TestHistorySizeFromTimestampsRead(t *testing.T) {
	root := filepath.Join(t.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: root, Commits: 300, FilesPerCommit: 1, CheckpointEvery: 100, ICT: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var reads atomic.Int32
	tbl := Open(countingReads{dirStore{root}, true, &reads}, Options{})
	var want int64
	err := Open(dirStore{root}, Options{}).HistoryEach(ctx, 0, -1, func(c CommitSummary) error {
		want += int64(len(c.AppendLine(nil)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tbl.HistorySize(ctx, 0, 299); err != nil || got != want {
		t.Fatalf("HistorySize: %d, %v; want %d, the lines' length", got, err, want)
	}
	fresh := Open(countingReads{dirStore{root}, true, &reads}, Options{})
	for v := int64(0); v < 300; v++ {
		if _, err := fresh.Version(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	before := reads.Load()
	if got, err := fresh.HistorySize(ctx, 0, 299); err != nil || got != want {
		t.Fatalf("HistorySize after the timestamps were read: %d, %v; want %d", got, err, want)
	}
	if n := reads.Load() - before; n != 0 {
		t.Errorf("HistorySize after the timestamps were read made %d reads, want 0", n)
	}
}
