package nodes

// The read-only nodes on real mounts of fixture tables, with the real
// data file server (serve.Table over a local store): each test checks a
// contract a node's file states.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/blobcache"
	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/delta/blobstore"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/serve"
)

// mountTable mounts the fixture table as MOUNTPOINT/t, read in place,
// and returns MOUNTPOINT/t and the engine's view of the same table.
func mountTable(t *testing.T, fixture string) (string, *delta.Table) {
	t.Helper()
	testenv.RequireFUSE(t)
	st, err := blobstore.Open(context.Background(), testenv.Fixture(t, fixture))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cache, err := blobcache.New(blobcache.Options{DiskDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	table := delta.Open(st, delta.Options{})
	d := NewTableDir(NewEnv(Options{}), "t", table, serve.NewTable("t", st, cache, serve.Options{}))
	if _, err := d.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(mountDirs(t, d), "t"), delta.Open(st, delta.Options{})
}

// mountDirs mounts a root holding the table directories ds at a fresh
// temp dir, unmounted when the test ends, and returns the mountpoint.
func mountDirs(t *testing.T, ds ...*TableDir) string {
	t.Helper()
	return testenv.MountFUSE(t, NewRoot(ds))
}

// A table directory lists every version, @latest and _history.jsonl;
// @latest points at the newest version; each @vN carries its commit
// time and keeps its inode; names that are no version are ENOENT.
func TestTableDirLists(t *testing.T) {
	dir, table := mountTable(t, "dat/basic_partitioned")
	latest, err := table.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for v := int64(0); v <= latest.Version(); v++ {
		want = append(want, fmt.Sprintf("@v%d", v))
	}
	want = append(want, "@latest", HistoryName)
	slices.Sort(want)
	if got := testenv.DirNames(t, dir); !slices.Equal(got, want) {
		t.Fatalf("ls %s = %v, want %v", dir, got, want)
	}
	if target, err := os.Readlink(filepath.Join(dir, "@latest")); err != nil || target != fmt.Sprintf("@v%d", latest.Version()) {
		t.Fatalf("@latest -> %q (%v), want @v%d", target, err, latest.Version())
	}
	for v := int64(0); v <= latest.Version(); v++ {
		p := filepath.Join(dir, fmt.Sprintf("@v%d", v))
		info, err := table.Version(context.Background(), v)
		if err != nil {
			t.Fatal(err)
		}
		var a, b syscall.Stat_t
		if err := syscall.Stat(p, &a); err != nil {
			t.Fatal(err)
		}
		if got := a.Mtim.Sec; got != info.ModTime.Unix() {
			t.Errorf("%s mtime %d, want the commit time %d", p, got, info.ModTime.Unix())
		}
		if a.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			t.Errorf("%s mode %o, want a directory", p, a.Mode)
		}
		if err := syscall.Stat(p, &b); err != nil || a.Ino != b.Ino {
			t.Errorf("%s inode %d then %d (%v): not stable", p, a.Ino, b.Ino, err)
		}
	}
	for _, name := range []string{fmt.Sprintf("@v%d", latest.Version()+1), "@v-1", "@vx", "@v01", "nope"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("stat %s: %v, want ENOENT", name, err)
		}
	}
}

// Each snapshot directory holds exactly the live files of its version in
// their partition layout, with the stored sizes and bytes.
func TestSnapshotDirServesLiveFiles(t *testing.T) {
	dir, table := mountTable(t, "dat/basic_partitioned")
	root := testenv.Fixture(t, "dat/basic_partitioned")
	latest, err := table.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for v := int64(0); v <= latest.Version(); v++ {
		snap, err := table.Snapshot(context.Background(), v)
		if err != nil {
			t.Fatal(err)
		}
		files, err := snap.LiveFiles()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{} // path in the snapshot dir -> stored key
		for _, f := range files {
			p := ""
			for _, c := range snap.Metadata().PartitionColumns {
				p = filepath.Join(p, delta.HivePathSegment(c, f.PartitionValues[c]))
			}
			want[filepath.Join(p, filepath.Base(f.Key))] = f.Key
		}
		sdir := filepath.Join(dir, fmt.Sprintf("@v%d", v))
		got := map[string]bool{}
		err = filepath.Walk(sdir, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(sdir, p)
			got[rel] = true
			key, ok := want[rel]
			if !ok {
				t.Errorf("@v%d serves %s, not a live file", v, rel)
				return nil
			}
			stored, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(key)))
			if err != nil {
				return err
			}
			served, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if fi.Size() != int64(len(stored)) || !bytes.Equal(served, stored) {
				t.Errorf("@v%d/%s: %d bytes served (stat %d), want the %d stored bytes", v, rel, len(served), fi.Size(), len(stored))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("@v%d serves %d files, want %d", v, len(got), len(want))
		}
	}
}

// A file with a deletion vector is served rewritten: stat gives the size
// of the bytes read, which are valid Parquet without the deleted rows.
func TestDataFileServesRowsWithoutDeleted(t *testing.T) {
	dir, table := mountTable(t, "delta-kernel-rs/golden-dv-partitioned-with-checkpoint")
	snap, err := table.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, a := range snap.Files() {
		if a.DeletionVector == nil {
			continue
		}
		f, err := snap.LiveFileOf(a)
		if err != nil {
			t.Fatal(err)
		}
		p := dir + "/@latest"
		for _, c := range snap.Metadata().PartitionColumns {
			p = filepath.Join(p, delta.HivePathSegment(c, f.PartitionValues[c]))
		}
		p = filepath.Join(p, filepath.Base(f.Key))
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != fi.Size() {
			t.Fatalf("%s: stat says %d bytes, read gave %d", p, fi.Size(), len(b))
		}
		pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s is not valid Parquet: %v", p, err)
		}
		n, err := snap.NumRecords(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		if want := n - a.DeletionVector.Cardinality; pf.NumRows() != want {
			t.Errorf("%s: %d rows served, want %d (%d stored, %d deleted)", p, pf.NumRows(), want, n, a.DeletionVector.Cardinality)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("the fixture has no file with a deletion vector")
	}
}

// Nothing in a table directory or a snapshot can be written: EROFS, and
// the log is unchanged.
func TestSnapshotIsReadOnly(t *testing.T) {
	dir, _ := mountTable(t, "dat/basic_append")
	v0 := filepath.Join(dir, "@v0")
	ents, err := os.ReadDir(v0)
	if err != nil || len(ents) == 0 {
		t.Fatalf("ls @v0: %v, %d entries", err, len(ents))
	}
	file := filepath.Join(v0, ents[0].Name())
	for what, op := range map[string]func() error{
		"create in @v0":     func() error { return os.WriteFile(filepath.Join(v0, "new.parquet"), nil, 0o644) },
		"mkdir in @v0":      func() error { return os.Mkdir(filepath.Join(v0, "d"), 0o755) },
		"unlink in @v0":     func() error { return os.Remove(file) },
		"rename in @v0":     func() error { return os.Rename(file, file+".x") },
		"open for write":    func() error { f, err := os.OpenFile(file, os.O_WRONLY, 0); f.Close(); return err },
		"truncate":          func() error { return os.Truncate(file, 0) },
		"chmod":             func() error { return os.Chmod(file, 0o600) },
		"mkdir in table":    func() error { return os.Mkdir(filepath.Join(dir, "@v999"), 0o755) },
		"create in table":   func() error { return os.WriteFile(filepath.Join(dir, "x"), nil, 0o644) },
		"remove @latest":    func() error { return os.Remove(filepath.Join(dir, "@latest")) },
		"symlink in table":  func() error { return os.Symlink("@v0", filepath.Join(dir, "@old")) },
		"rmdir a snapshot":  func() error { return syscall.Rmdir(v0) },
		"rename a snapshot": func() error { return os.Rename(v0, filepath.Join(dir, "@v0x")) },
	} {
		if err := op(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", what, err)
		}
	}
	if _, err := os.Stat(filepath.Join(testenv.Fixture(t, "dat/basic_append"), "new.parquet")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the table's directory changed: %v", err)
	}
}

// _history.jsonl holds one line per commit, oldest first, each the
// engine's summary of that version.
func TestHistoryFileLines(t *testing.T) {
	dir, table := mountTable(t, "dat/basic_partitioned")
	f, err := os.Open(filepath.Join(dir, HistoryName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []delta.CommitSummary
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var h delta.CommitSummary
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, h)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var want []delta.CommitSummary
	if err := table.HistoryEach(context.Background(), 0, -1, func(h delta.CommitSummary) error {
		want = append(want, h)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("%d history lines, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Version != want[i].Version || got[i].Operation != want[i].Operation || !got[i].Timestamp.Equal(want[i].Timestamp) {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if got[0].Version != 0 {
		t.Errorf("first line is version %d, want 0", got[0].Version)
	}
}
