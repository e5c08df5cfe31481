package integration

// Concurrent appends to one local table from two `deltafs mount`
// processes and several `deltafs append` processes at once:
// every append lands exactly once, in contiguous versions, and no commit
// is overwritten: each writer's version holds its own file.

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// raceAppend is one append of the race: the files and the version its
// writer was told (close() via _status.jsonl, or `deltafs append`'s output).
type raceAppend struct {
	names   []string
	err     error
	version int64
}

func TestAppendRace(t *testing.T) {
	const (
		writers        = 8 // over two mounts
		filesPerWriter = 3
		appenders      = 3 // `deltafs append` processes of 2 files each
	)
	root := testenv.CopyFixture(t, fixtureAppend)
	v0 := latestSnapshot(t, root).Version()
	var mounts []*procMount
	for range 2 {
		mounts = append(mounts, startMount(t, mountOpts{cacheDir: t.TempDir(), sources: []string{"t=" + root}}))
	}
	sums := map[string][32]byte{}
	bodies := func(names ...string) [][]byte {
		var out [][]byte
		for _, n := range names {
			data := parquetBytes(t, []basicRow{{Letter: ptr(n), Number: ptr(int64(len(sums)))}})
			sums[n] = sha256Sum(data)
			out = append(out, data)
		}
		return out
	}
	var drops [writers][filesPerWriter]raceAppend
	var runs [appenders]raceAppend
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		names := make([]string, filesPerWriter)
		for j := range names {
			names[j] = fmt.Sprintf("w%d-%d.parquet", w, j)
		}
		data := bodies(names...)
		inbox := filepath.Join(mounts[w%2].mnt, "t", "inbox")
		wg.Go(func() {
			<-start
			for j, name := range names {
				_, err := writeInChunks(filepath.Join(inbox, name), data[j])
				drops[w][j] = raceAppend{names: []string{name}, err: err, version: -1}
			}
		})
	}
	dir := t.TempDir()
	for a := range appenders {
		names := []string{fmt.Sprintf("a%d-0.parquet", a), fmt.Sprintf("a%d-1.parquet", a)}
		var paths []string
		for j, data := range bodies(names...) {
			paths = append(paths, filepath.Join(dir, names[j]))
			if err := os.WriteFile(paths[j], data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		wg.Go(func() {
			<-start
			res := runAppend(t, nil, 0, root, paths...)
			if res.err != nil {
				res.err = fmt.Errorf("%w: %s", res.err, res.output)
			}
			runs[a] = raceAppend{names: names, err: res.err, version: res.version}
		})
	}
	close(start)
	wg.Wait()

	claimed := claimedVersions(t, mounts)
	var all []raceAppend
	for w := range drops {
		for j := range drops[w] {
			d := drops[w][j]
			d.version = claimed[d.names[0]]
			all = append(all, d)
		}
	}
	all = append(all, runs[:]...)
	checkRace(t, root, v0, all, sums)
}

// claimedVersions reads each mount's inbox/_status.jsonl: file -> the
// version its close() committed.
func claimedVersions(t *testing.T, mounts []*procMount) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, m := range mounts {
		for _, e := range inboxStatus(t, filepath.Join(m.mnt, "t")) {
			if e.Version != nil {
				if prev, dup := out[e.File]; dup {
					t.Errorf("%s committed twice per the mounts' status: versions %d and %d", e.File, prev, *e.Version)
				}
				out[e.File] = *e.Version
			}
		}
	}
	return out
}

// checkRace audits the table after the race: all appends acknowledged,
// versions v0+1.. contiguous with one append each, every writer's version
// holding exactly its files with their bytes, txnIds and data files unique.
func checkRace(t *testing.T, root string, v0 int64, all []raceAppend, sums map[string][32]byte) {
	t.Helper()
	acked := map[string]bool{}
	var groups [][]string
	for _, a := range all {
		if a.err != nil {
			t.Errorf("append of %v failed: %v", a.names, a.err)
		}
		for _, n := range a.names {
			acked[n] = true
		}
		groups = append(groups, a.names)
	}
	audit := auditTable(t, root)
	audit.checkConsistent(t, root, v0)
	audit.checkAppends(t, root, sums, acked, groups)
	if want := v0 + int64(len(all)); audit.latest != want {
		t.Errorf("latest version %d after %d appends on version %d, want %d", audit.latest, len(all), v0, want)
	}
	owner := map[int64][]string{}
	for _, a := range all {
		if a.version <= v0 || a.version > audit.latest {
			t.Errorf("append of %v was told version %d, outside %d..%d", a.names, a.version, v0+1, audit.latest)
			continue
		}
		if prev, dup := owner[a.version]; dup {
			t.Errorf("version %d claimed by %v and %v: a commit was overwritten", a.version, prev, a.names)
		}
		owner[a.version] = a.names
		if got := audit.commits[a.version].sources; fmt.Sprint(got) != fmt.Sprint(a.names) {
			t.Errorf("version %d holds %v, but it was acknowledged to %v", a.version, got, a.names)
		}
	}
	t.Logf("%d appends (%d through 2 mounts, %d by deltafs append) landed in versions %d..%d; %d orphan data files",
		len(all), len(all)-countMulti(all), countMulti(all), v0+1, audit.latest, len(audit.orphans))
}

// countMulti counts the appends of more than one file (deltafs append).
func countMulti(all []raceAppend) int {
	n := 0
	for _, a := range all {
		if len(a.names) > 1 {
			n++
		}
	}
	return n
}
