package integration

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// appendOutcome is what one table's appends ended with, as both front
// ends must agree on it.
type appendOutcome struct {
	errs   []bool   // each step failed
	adds   []int    // adds of each new version
	status []string // file, version (relative), errno of each status line
}

// sampleFile is the first data file of root's @latest as the mount
// serves it (in the table's schema, deleted rows removed): its directory
// under the snapshot (the partition layout the inbox takes) and bytes.
// ok is false when the snapshot has no data file.
func sampleFile(t *testing.T, latest string) (dir string, data []byte, ok bool) {
	t.Helper()
	var found string
	filepath.WalkDir(latest, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return fs.SkipAll
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	if found == "" {
		return ".", nil, false
	}
	data, err := os.ReadFile(found)
	if err != nil {
		return ".", nil, false // an unservable file: the table's steps use none
	}
	rel, _ := filepath.Rel(latest, filepath.Dir(found))
	return filepath.ToSlash(rel), data, true
}

// appendScript runs the same appends through f: the sample renamed in
// from a temporary name, a file that is not Parquet renamed in (refused),
// a scratch directory of two copies renamed in (one version), and a copy
// written under its final name (committed at close over FUSE, once
// quiet over NFS). It returns the final file's status name, "" when no
// sample.
func appendScript(f frontEnd, dir string, data []byte, ok bool) (steps []bool, final string) {
	step := func(err error) { steps = append(steps, err != nil) }
	in := path.Join("inbox", dir)
	if dir != "." {
		parts := strings.Split(dir, "/")
		for i := range parts {
			step(f.mkdir(path.Join(append([]string{"inbox"}, parts[:i+1]...)...)))
		}
	}
	step(f.write(in+"/.bad.tmp", []byte("not parquet")))
	step(f.rename(in+"/.bad.tmp", in+"/bad.parquet"))
	if !ok {
		return steps, ""
	}
	step(f.write(in+"/.a.tmp", data))
	step(f.rename(in+"/.a.tmp", in+"/a.parquet"))
	scratch := path.Join("inbox", ".batch", dir)
	parts := strings.Split(path.Join(".batch", dir), "/")
	for i := range parts {
		step(f.mkdir(path.Join(append([]string{"inbox"}, parts[:i+1]...)...)))
	}
	step(f.write(scratch+"/p1.parquet", data))
	step(f.write(scratch+"/p2.parquet", data))
	step(f.rename("inbox/.batch", "inbox/batch"))
	step(f.write(in+"/final.parquet", data))
	return steps, path.Join(dir, "final.parquet")
}

// outcomeOf reads what root's log and f's status say after the script.
func outcomeOf(t *testing.T, f frontEnd, root string, before int64, steps []bool) appendOutcome {
	o := appendOutcome{errs: steps}
	for v := before + 1; v <= latestSnapshot(t, root).Version(); v++ {
		o.adds = append(o.adds, commitAdds(t, root, v))
	}
	for _, e := range f.status() {
		v := "-"
		if e.Version != nil {
			v = fmt.Sprint(*e.Version - before)
		}
		o.status = append(o.status, fmt.Sprintf("%s v+%s %s", e.File, v, e.Errno))
	}
	return o
}

// hasLine reports whether a status line names file.
func hasLine(events []inboxEvent, file string) bool {
	return slices.ContainsFunc(events, func(e inboxEvent) bool { return e.File == file })
}

// Every shared fixture table takes the same appends through a FUSE mount
// and over NFS, each front end on its own copies, and ends the same: the
// same steps failing, the same new versions with the same number of files
// each, the same status lines (file, version, errno) in the same order.
// The file appended is one the mount serves from the table's @latest,
// into its own partition: every table deltafs can write takes it (three
// new versions), one it cannot write refuses alike with EROFS; a table
// whose @latest holds no file takes only the refusal.
func TestNFSInboxMatchesFUSEEveryTable(t *testing.T) {
	testenv.RequireFUSE(t)
	names := slices.Sorted(maps.Keys(conformanceTables(t)))
	var fuseCfg, nfsCfg mount.Config
	fuseRoots, nfsRoots := make([]string, len(names)), make([]string, len(names))
	for i, name := range names {
		fuseRoots[i], nfsRoots[i] = testenv.CopyFixture(t, name), testenv.CopyFixture(t, name)
		table := fmt.Sprintf("t%03d", i)
		fuseCfg.Sources = append(fuseCfg.Sources, mount.Source{Name: table, URL: fuseRoots[i]})
		nfsCfg.Sources = append(nfsCfg.Sources, mount.Source{Name: table, URL: nfsRoots[i]})
	}
	nfsCfg.NFSSettle = 300 * time.Millisecond
	mnt := mountFS(t, fuseCfg)
	v := serveNFS(t, nfsCfg)

	viaFUSE := make([]appendOutcome, len(names))
	nfsSteps := make([][]bool, len(names))
	finals := make([]string, len(names))
	sampled := make([]bool, len(names))
	befores := make([]int64, len(names))
	for i := range names {
		table := fmt.Sprintf("t%03d", i)
		befores[i] = latestSnapshot(t, fuseRoots[i]).Version()
		dir, data, ok := sampleFile(t, filepath.Join(mnt, table, "@latest")+"/")
		sampled[i] = ok
		ff := fuseFront{t, filepath.Join(mnt, table)}
		steps, final := appendScript(ff, dir, data, ok)
		viaFUSE[i] = outcomeOf(t, ff, fuseRoots[i], befores[i], steps)
		nfsSteps[i], finals[i] = appendScript(nfsFront{t: t, v: v, table: table}, dir, data, ok)
		if final != "" && !hasLine(ff.status(), final) {
			finals[i] = "" // no outcome to wait for over NFS either
		}
	}
	// Files written under their final name commit once quiet over NFS.
	for i := range names {
		nf := nfsFront{t: t, v: v, table: fmt.Sprintf("t%03d", i)}
		for deadline := time.Now().Add(20 * time.Second); finals[i] != "" && time.Now().Before(deadline) && !hasLine(nf.status(), finals[i]); {
			time.Sleep(50 * time.Millisecond)
		}
	}
	committed, refusedOnly := 0, 0
	for i, name := range names {
		nf := nfsFront{t: t, v: v, table: fmt.Sprintf("t%03d", i)}
		viaNFS := outcomeOf(t, nf, nfsRoots[i], befores[i], nfsSteps[i])
		if fmt.Sprint(viaFUSE[i]) != fmt.Sprint(viaNFS) {
			t.Errorf("%s: outcomes differ:\n fuse %+v\n nfs  %+v", name, viaFUSE[i], viaNFS)
		}
		switch {
		case len(viaFUSE[i].adds) > 0:
			committed++
			if fmt.Sprint(viaFUSE[i].adds) != "[1 2 1]" {
				t.Errorf("%s: new versions add %v files, want [1 2 1]", name, viaFUSE[i].adds)
			}
		case sampled[i] && !strings.Contains(fmt.Sprint(viaFUSE[i].status), "EROFS"):
			// A file the mount serves from @latest, appended back into
			// its own partition, fits the table: only a table deltafs
			// cannot write may refuse it.
			t.Errorf("%s: its own served file was refused: %+v", name, viaFUSE[i])
		default:
			refusedOnly++
		}
	}
	if committed < len(names)/2 || len(names) < 50 {
		t.Errorf("%d of %d tables took appends, %d refused them all: want most tables written", committed, len(names), refusedOnly)
	}
	t.Logf("%d tables: %d took appends, %d refused them alike", len(names), committed, refusedOnly)
}
