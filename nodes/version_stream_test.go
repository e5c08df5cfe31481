package nodes

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/scalegen"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// versionCounter counts the one-version lookups a table directory makes
// through its Table (each is a LOOKUP of an @vN the kernel had no
// attributes for).
type versionCounter struct {
	Table
	versions atomic.Int32
}

func (c *versionCounter) Version(ctx context.Context, v int64) (delta.VersionInfo, error) {
	c.versions.Add(1)
	return c.Table.Version(ctx, v)
}

// listedStore is a table's storage seen as an object store: no local
// directory, no listing by name, so a listing carries every commit's time;
// it counts its reads.
type listedStore struct {
	delta.Storage
	reads atomic.Int32
}

func (s *listedStore) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	s.reads.Add(1)
	return s.Storage.ReadRange(ctx, key, off, n)
}

// historyDir mounts a generated table of commits versions (with in-commit
// timestamps or not) as MOUNT/t through store (wrapping the local one)
// and returns the directory, the counter of LOOKUPs and the store.
func historyDir(t *testing.T, commits int, ict bool) (string, *versionCounter, *listedStore) {
	testenv.RequireFUSE(t)
	root := filepath.Join(t.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: root, Commits: commits, FilesPerCommit: 1, CheckpointEvery: 300, ICT: ict}); err != nil {
		t.Fatal(err)
	}
	st, err := blobstore.Open(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ls := &listedStore{Storage: st}
	vc := &versionCounter{Table: delta.Open(ls, delta.Options{})}
	d := NewTableDir(NewEnv(Options{LongTimeout: time.Hour}), "t", vc, nil)
	if _, err := d.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(mountDirs(t, d), "t"), vc, ls
}

// statVersions lstat-s every @vN of dir (as ls -l does after listing)
// and checks each one's mtime is its commit time; it returns how many.
func statVersions(t *testing.T, dir string, entries []os.DirEntry) int {
	n := 0
	for _, e := range entries {
		var v int64
		if _, err := fmt.Sscanf(e.Name(), "@v%d", &v); err != nil {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatalf("lstat %s: %v", e.Name(), err)
		}
		if want := scalegen.CommitTime(v); !fi.ModTime().Equal(want) || !fi.IsDir() {
			t.Fatalf("%s: mtime %v dir %v, want %v and a directory", e.Name(), fi.ModTime(), fi.IsDir(), want)
		}
		n++
	}
	return n
}

// A listing gives @vN the attributes it knows without reading the log: a
// table whose listing carries commit times (an object store's) has ls -l
// answered from the READDIRPLUS replies, with no LOOKUP per version.
func TestListingCarriesKnownVersionTimes(t *testing.T) {
	const commits = 700 // more than two batches of plusBatch
	dir, vc, _ := historyDir(t, commits, false)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	before := vc.versions.Load()
	if n := statVersions(t, dir, entries); n != commits {
		t.Fatalf("listed %d versions, want %d", n, commits)
	}
	if n := vc.versions.Load() - before; n != 0 {
		t.Errorf("stat of %d listed versions made %d LOOKUPs of a version, want 0", commits, n)
	}
}

// A plain listing of a table with in-commit timestamps reads no commit
// (a version's time is its commit's to read: a LOOKUP does, when ls -l
// asks), and the times then given are right.
func TestListingReadsNoCommit(t *testing.T) {
	dir, _, st := historyDir(t, 700, true)
	before := st.reads.Load()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := st.reads.Load() - before; n != 0 {
		t.Errorf("listing the table read %d objects, want 0", n)
	}
	if n := statVersions(t, dir, entries); n != 700 {
		t.Fatalf("listed %d versions, want 700", n)
	}
}

// countedLocal is a local table's Store, every capability kept (the
// listing by name, the readers' times), counting its reads and stats.
type countedLocal struct {
	*blobstore.Store
	reads, stats atomic.Int32
}

func (s *countedLocal) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	s.reads.Add(1)
	return s.Store.ReadRange(ctx, key, off, n)
}

func (s *countedLocal) Stat(ctx context.Context, key string) (delta.ObjectInfo, error) {
	s.stats.Add(1)
	return s.Store.Stat(ctx, key)
}

// ls -l of a local table without in-commit timestamps reads each commit's
// first bytes once, a batch of versions at a time with the next batch read
// ahead while the kernel takes the current one: the times are right, no
// commit is read twice by a batch and its read ahead, none is stat-ed, and
// the size of _history.jsonl afterwards reads nothing.
func TestLsLReadsEachCommitOnce(t *testing.T) {
	testenv.RequireFUSE(t)
	const commits = 1000 // four batches of plusBatch
	root := filepath.Join(t.TempDir(), "t")
	if _, err := scalegen.Generate(scalegen.Spec{Dir: root, Commits: commits, FilesPerCommit: 1, CheckpointEvery: 300}); err != nil {
		t.Fatal(err)
	}
	st, err := blobstore.Open(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cs := &countedLocal{Store: st}
	d := NewTableDir(NewEnv(Options{LongTimeout: time.Hour}), "t", delta.Open(cs, delta.Options{}), nil)
	if _, err := d.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mountDirs(t, d), "t")
	reads, stats := cs.reads.Load(), cs.stats.Load()
	out, err := exec.Command("ls", "-l", "--time-style=+%s", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		var v int64
		if len(f) < 7 || !strings.HasPrefix(f[6], "@v") {
			continue
		}
		if _, err := fmt.Sscanf(f[6], "@v%d", &v); err != nil {
			continue
		}
		if ts, _ := strconv.ParseInt(f[5], 10, 64); ts != scalegen.CommitTime(v).Unix() {
			t.Fatalf("%s: time %s, want %d", f[6], f[5], scalegen.CommitTime(v).Unix())
		}
		listed++
	}
	if listed != commits {
		t.Fatalf("ls -l listed %d versions, want %d", listed, commits)
	}
	if r, s := cs.reads.Load()-reads, cs.stats.Load()-stats; r > commits || s > 0 {
		t.Errorf("ls -l of %d versions: %d reads, %d stats; want at most a read a commit, no stat", commits, r, s)
	}
	reads = cs.reads.Load()
	if _, err := os.Stat(filepath.Join(dir, HistoryName)); err != nil {
		t.Fatal(err)
	}
	if r := cs.reads.Load() - reads; r != 0 {
		t.Errorf("the stat of %s after ls -l read %d commits, want 0", HistoryName, r)
	}
}
