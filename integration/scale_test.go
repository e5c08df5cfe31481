package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/scalegen"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// Correctness at scale (issue "Production-size tables"), sized for two
// cores: thousands of versions, not millions. Timing is the scale
// benchmark's business (bench/scalebench), not these tests'.

func genTable(t *testing.T, s scalegen.Spec) *scalegen.Result {
	t.Helper()
	s.Dir = filepath.Join(t.TempDir(), "t")
	res, err := scalegen.Generate(s)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// mountCaches is what the tests read of the "mount" member of a mount's
// status file: its snapshot cache and its plans of @changes ranges.
type mountCaches struct {
	Snapshots struct {
		Budget     int64 `json:"budgetBytes"`
		StateBytes int64 `json:"stateBytes"`
		States     int   `json:"states"`
	} `json:"snapshotCache"`
	Plans struct {
		Budget int64 `json:"budgetBytes"`
		Bytes  int64 `json:"bytes"`
		Plans  int   `json:"plans"`
	} `json:"changesPlans"`
}

// readMountCaches reads the mount's caches from its status file.
func readMountCaches(t *testing.T, mnt string) mountCaches {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(mnt, ".deltafs-status.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Mount mountCaches `json:"mount"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("status file: %v\n%s", err, data)
	}
	return st.Mount
}

// snapshotCacheStatus reads the mount's snapshot cache from its status file.
func snapshotCacheStatus(t *testing.T, mnt string) (bytes int64, states int, budget int64) {
	t.Helper()
	c := readMountCaches(t, mnt).Snapshots
	return c.StateBytes, c.States, c.Budget
}

// A table of 3,000 versions: listing it and stat-ing every @vN builds no
// snapshot; each entry has its commit time as mtime (in-commit timestamps
// and file times alike); a missing version is ENOENT at once.
func TestScaleVersionEntriesAreCheap(t *testing.T) {
	for _, ict := range []bool{true, false} {
		t.Run(fmt.Sprintf("ict=%v", ict), func(t *testing.T) {
			spec := scalegen.Spec{Commits: 3000, FilesPerCommit: 1, CheckpointEvery: 100, KeepCheckpoints: true, MaxLive: 300, ICT: ict}
			if !ict {
				spec.CheckpointEvery = 0 // only the last: old versions have no checkpoint near them
			}
			res := genTable(t, spec)
			mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: res.Dir}}, ReadOnly: true})
			_, before, budget := snapshotCacheStatus(t, mnt)
			if budget <= 0 {
				t.Fatal("the status file shows no snapshot cache budget")
			}
			ents, err := os.ReadDir(filepath.Join(mnt, "t"))
			if err != nil {
				t.Fatal(err)
			}
			versions := 0
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), "@v") {
					versions++
				}
			}
			if versions != 3000 {
				t.Fatalf("%d @vN entries, want 3000", versions)
			}
			for v := int64(0); v < 3000; v++ {
				fi, err := os.Lstat(filepath.Join(mnt, "t", fmt.Sprintf("@v%d", v)))
				if err != nil {
					t.Fatal(err)
				}
				if want := scalegen.CommitTime(v); !fi.ModTime().Equal(want) {
					t.Fatalf("@v%d mtime %s, want the commit time %s", v, fi.ModTime().UTC(), want)
				}
			}
			if _, after, _ := snapshotCacheStatus(t, mnt); after > before {
				t.Errorf("listing and stat-ing 3000 versions grew the snapshot cache from %d to %d entries: entries built snapshots", before, after)
			}
			for _, name := range []string{"@v3000", "@v999999", "@v-1"} {
				if _, err := os.Lstat(filepath.Join(mnt, "t", name)); !errors.Is(err, syscall.ENOENT) {
					t.Errorf("stat %s: %v, want ENOENT", name, err)
				}
			}
			// A version far from any checkpoint lists its files.
			got, err := os.ReadDir(filepath.Join(mnt, "t", "@v1234"))
			if err != nil || len(got) != 300 {
				t.Errorf("@v1234: %d files (%v), want 300", len(got), err)
			}
		})
	}
}

// Touching every version of a long table keeps the snapshot cache within
// its budget, and the heap (read from the runtime after a GC) within a
// bound that does not grow with the number of versions touched.
func TestScaleMemoryStaysInBudget(t *testing.T) {
	res := genTable(t, scalegen.Spec{Commits: 1500, FilesPerCommit: 2, CheckpointEvery: 100, KeepCheckpoints: true, MaxLive: 2000})
	const budget = 4 << 20
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: res.Dir}}, ReadOnly: true, SnapshotCacheSize: budget})
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	base := heap()
	var peakCache int64
	for v := int64(0); v < 1500; v += 3 {
		ents, err := os.ReadDir(filepath.Join(mnt, "t", fmt.Sprintf("@v%d", v)))
		if want := min(2*(v+1), 2000); err != nil || int64(len(ents)) != want {
			t.Fatalf("@v%d: %d files (%v), want %d", v, len(ents), err, want)
		}
		if v%150 == 0 {
			b, _, _ := snapshotCacheStatus(t, mnt)
			peakCache = max(peakCache, b)
		}
	}
	b, n, got := snapshotCacheStatus(t, mnt)
	peakCache = max(peakCache, b)
	if got != budget {
		t.Errorf("status file says budget %d, want %d", got, budget)
	}
	if peakCache > budget+budget/2 { // one entry may exceed alone; these are ~1 MiB
		t.Errorf("snapshot cache held %d bytes (%d entries now), budget %d", peakCache, n, budget)
	}
	// 500 versions of ~1,000-2,000 files: kept whole they are ~300 MiB.
	if grew := int64(heap()) - int64(base); grew > 48<<20 {
		t.Errorf("heap grew by %d MiB after touching 500 versions with a %d MiB snapshot budget", grew>>20, budget>>20)
	}
}

// A corrupt commit fails the versions that need it, with its reason in
// the log, while its neighbours read: the version before it, and those
// after the next checkpoint.
func TestScaleCorruptVersionFailsAloneWithItsReason(t *testing.T) {
	res := genTable(t, scalegen.Spec{Commits: 300, FilesPerCommit: 1, CheckpointEvery: 100, KeepCheckpoints: true})
	bad := filepath.Join(res.Dir, "_delta_log", fmt.Sprintf("%020d.json", 150))
	if err := os.WriteFile(bad, []byte("{\"add\": not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: res.Dir}}, ReadOnly: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, c := range []struct {
		v     int
		files int
		fails bool
	}{{149, 150, false}, {150, 0, true}, {199, 0, true}, {200, 201, false}, {299, 300, false}} {
		ents, err := os.ReadDir(filepath.Join(mnt, "t", fmt.Sprintf("@v%d", c.v)))
		switch {
		case c.fails && !errors.Is(err, syscall.EIO):
			t.Errorf("@v%d: %v, want EIO (it needs the corrupt commit 150)", c.v, err)
		case !c.fails && (err != nil || len(ents) != c.files):
			t.Errorf("@v%d: %d files (%v), want %d", c.v, len(ents), err, c.files)
		}
	}
	if l := logs.String(); !strings.Contains(l, "commit 150") || !strings.Contains(l, "version=150") {
		t.Errorf("the log does not name the corrupt commit and version:\n%s", l)
	}
}

// Entries the kernel forgets cost the mount nothing: after stat-ing
// ~45,000 (version, file) entries across 300 versions, dropping the
// kernel's dentry and inode caches (it then sends FORGET for each) brings
// the mount's heap back to where it was, since nodes keep no snapshot.
func TestScaleForgottenEntriesCostNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "dropping the kernel's caches needs root")
	}
	res := genTable(t, scalegen.Spec{Commits: 600, FilesPerCommit: 1, CheckpointEvery: 50, KeepCheckpoints: true, MaxLive: 150})
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: res.Dir}}, ReadOnly: true, SnapshotCacheSize: 4 << 20})
	heap := testenv.LiveHeap // the objects' bytes: spans freed objects leave half-empty do not count
	base := heap()
	entries := 0
	for v := 300; v < 600; v++ {
		dir := filepath.Join(mnt, "t", fmt.Sprintf("@v%d", v))
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if _, err := os.Lstat(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
			entries++
		}
	}
	held := heap() - base
	t.Logf("%d entries held by the kernel: %d bytes of heap each", entries, held/int64(entries))
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	var after int64
	for i := 0; i < 100; i++ { // FORGETs arrive asynchronously
		if after = heap() - base; after < held/10 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cache, n, _ := snapshotCacheStatus(t, mnt)
	t.Logf("after the kernel forgot them: %d bytes of heap above the start, of which the snapshot cache holds ~%d (%d entries)", after, cache, n)
	if after-cache > held/5 {
		t.Errorf("the mount still holds %d bytes (%d while the kernel held %d entries): forgotten entries are not freed", after, held, entries)
	}
}
