package integration

// An audit of a local table after crashes or races: the log is
// contiguous and every version builds, each append left one complete
// commit or nothing, and every data file on disk is accounted for.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
)

// tableAudit is what a table's log and directory say about appends.
type tableAudit struct {
	latest  int64
	commits []auditCommit          // by version, from version 0
	sources map[string][]int64     // user file name -> versions that commit it
	adds    map[string]int64       // data file key -> version of its add
	txns    map[string][]int64     // commitInfo.txnId -> versions
	orphans []string               // data files no add names
	partial []string               // upload temp files (*.tmp) beside the data files
	logTmps []string               // temp files left in _delta_log
	sums    map[string][32]byte    // data file key -> sha256 (files added by tests only)
	addSize map[string]int64       // data file key -> add.size
	files   map[string]fs.FileInfo // data files on disk by key
}

// auditCommit is one commit file's appends.
type auditCommit struct {
	version int64
	txnID   string
	sources []string
	adds    []string // keys, URL-decoded
}

// auditTable reads every commit of the table at root and its files. It
// fails the test when the commits are not contiguous from 0 or a commit
// does not parse.
func auditTable(t testing.TB, root string) *tableAudit {
	t.Helper()
	a := &tableAudit{sources: map[string][]int64{}, adds: map[string]int64{}, txns: map[string][]int64{},
		sums: map[string][32]byte{}, addSize: map[string]int64{}, files: map[string]fs.FileInfo{}}
	versions, tmps := logVersions(t, root)
	a.logTmps = tmps
	for i, v := range versions {
		if v != int64(i) {
			t.Fatalf("log of %s: versions %v are not contiguous from 0", root, versions)
		}
		c := readAuditCommit(t, root, v, a)
		a.commits = append(a.commits, c)
		a.txns[c.txnID] = append(a.txns[c.txnID], v)
		for _, s := range c.sources {
			a.sources[s] = append(a.sources[s], v)
		}
	}
	a.latest = int64(len(versions)) - 1
	a.scanDataFiles(t, root)
	return a
}

// logVersions lists the commit versions in _delta_log (sorted) and the
// temp files a put-if-absent left there.
func logVersions(t testing.TB, root string) ([]int64, []string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(root, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}
	var vs []int64
	var tmps []string
	for _, e := range ents {
		var v int64
		switch {
		case strings.HasSuffix(e.Name(), ".tmp"):
			tmps = append(tmps, e.Name())
		case len(e.Name()) == 25 && strings.HasSuffix(e.Name(), ".json"):
			if _, err := fmt.Sscanf(e.Name(), "%020d.json", &v); err == nil {
				vs = append(vs, v)
			}
		}
	}
	slices.Sort(vs)
	return vs, tmps
}

// readAuditCommit parses commit v, recording its adds in a (a data file
// added twice fails the test).
func readAuditCommit(t testing.TB, root string, v int64, a *tableAudit) auditCommit {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "_delta_log", fmt.Sprintf("%020d.json", v)))
	if err != nil {
		t.Fatalf("commit %d: %v", v, err)
	}
	c := auditCommit{version: v}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var act struct {
			Add *struct {
				Path string `json:"path"`
				Size int64  `json:"size"`
			} `json:"add"`
			CommitInfo *struct {
				TxnID   string   `json:"txnId"`
				Sources []string `json:"deltafs.sourceFiles"`
			} `json:"commitInfo"`
		}
		if err := json.Unmarshal(line, &act); err != nil {
			t.Fatalf("commit %d: torn or garbage line %q: %v", v, line, err)
		}
		if ci := act.CommitInfo; ci != nil {
			c.txnID, c.sources = ci.TxnID, ci.Sources
		}
		if act.Add != nil {
			key, err := url.PathUnescape(act.Add.Path)
			if err != nil {
				t.Fatalf("commit %d: add path %q: %v", v, act.Add.Path, err)
			}
			if prev, dup := a.adds[key]; dup {
				t.Errorf("data file %s added twice: versions %d and %d", key, prev, v)
			}
			a.adds[key], a.addSize[key] = v, act.Add.Size
			c.adds = append(c.adds, key)
		}
	}
	return c
}

// scanDataFiles lists the table's data files (outside _delta_log),
// records the orphans and hashes the files deltafs added.
func (a *tableAudit) scanDataFiles(t testing.TB, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel == "_delta_log" {
				return filepath.SkipDir
			}
			return nil
		}
		key := filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		a.files[key] = fi
		_, added := a.adds[key]
		switch {
		case strings.HasSuffix(key, ".tmp"):
			a.partial = append(a.partial, key)
		case !added:
			a.orphans = append(a.orphans, key)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scan %s: %v", root, err)
	}
}

// sum returns the sha256 of the data file key of the table at root.
func (a *tableAudit) sum(t testing.TB, root, key string) [32]byte {
	t.Helper()
	if s, ok := a.sums[key]; ok {
		return s
	}
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(key)))
	if err != nil {
		t.Fatalf("read data file %s: %v", key, err)
	}
	a.sums[key] = sha256.Sum256(data)
	return a.sums[key]
}

// checkConsistent checks what holds after any crash: every add names a
// data file of its recorded size, no txnId is committed twice, and the
// engine builds every version from `from` to the latest with its live
// files present on disk.
func (a *tableAudit) checkConsistent(t testing.TB, root string, from int64) {
	t.Helper()
	for key, size := range a.addSize {
		fi, ok := a.files[key]
		if !ok {
			t.Errorf("version %d adds %s, which is not on disk (half-present append)", a.adds[key], key)
		} else if fi.Size() != size {
			t.Errorf("version %d adds %s of %d bytes; the file has %d", a.adds[key], key, size, fi.Size())
		}
	}
	for id, vs := range a.txns {
		if id != "" && len(vs) > 1 {
			t.Errorf("txnId %s committed in versions %v", id, vs)
		}
	}
	checkVersionsBuild(t, root, max(from, 0), a.latest)
}

// checkVersionsBuild opens the table afresh and builds versions from..to.
func checkVersionsBuild(t testing.TB, root string, from, to int64) {
	t.Helper()
	ctx := context.Background()
	st, err := blobstore.Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	table := delta.Open(st, delta.Options{})
	latest, err := table.Latest(ctx)
	if err != nil {
		t.Fatalf("table unreadable after the crash: %v", err)
	}
	if latest.Version() != to {
		t.Errorf("engine's latest version %d, the log's %d", latest.Version(), to)
	}
	for v := from; v <= to; v++ {
		snap, err := table.Snapshot(ctx, v)
		if err != nil {
			t.Errorf("version %d does not build: %v", v, err)
			continue
		}
		if _, err := snap.LiveFiles(); err != nil {
			t.Errorf("version %d: live files: %v", v, err)
		}
	}
}

// checkAppends checks the appends a test made: each acknowledged one is
// committed exactly once, with the bytes written (sums: name -> sha256 of
// the file given); an unacknowledged one at most once. Files given to one
// append (groups) land in one version or none. It returns how many
// unacknowledged appends landed.
func (a *tableAudit) checkAppends(t testing.TB, root string, sums map[string][32]byte, acked map[string]bool, groups [][]string) int {
	t.Helper()
	landed := 0
	for name, want := range sums {
		vs := a.sources[name]
		switch {
		case len(vs) > 1:
			t.Errorf("%s committed %d times: versions %v", name, len(vs), vs)
		case len(vs) == 0 && acked[name]:
			t.Errorf("%s: close()/append acknowledged, but no commit holds it", name)
		case len(vs) == 1:
			if !acked[name] {
				landed++
			}
			a.checkContent(t, root, name, vs[0], want)
		}
	}
	for _, g := range groups {
		var at []int64
		for _, name := range g {
			at = append(at, a.sources[name]...)
		}
		if len(at) != 0 && (len(at) != len(g) || slices.Min(at) != slices.Max(at)) {
			t.Errorf("one append of %v landed as versions %v, want all in one version or none", g, at)
		}
	}
	return landed
}

// checkContent checks that version v's add for name holds the bytes given.
func (a *tableAudit) checkContent(t testing.TB, root, name string, v int64, want [32]byte) {
	t.Helper()
	c := a.commits[v]
	i := slices.Index(c.sources, name)
	if i < 0 || len(c.adds) != len(c.sources) {
		t.Errorf("version %d: sources %v, adds %v: cannot match %s to its data file", v, c.sources, c.adds, name)
		return
	}
	if _, ok := a.files[c.adds[i]]; ok && a.sum(t, root, c.adds[i]) != want {
		t.Errorf("version %d: data file %s of %s differs from the file written", v, c.adds[i], name)
	}
}
