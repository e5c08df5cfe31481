package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
	"github.com/deltafs/deltafs/nodes"
)

// mountFixtures mounts the DV, column-mapping, escaped-partition and
// refused fixtures side by side as dv, cm, esc and bad.
func mountFixtures(t *testing.T, cfg mount.Config) string {
	t.Helper()
	cfg.Sources = []mount.Source{
		{Name: "dv", URL: testenv.Fixture(t, fixtureDV)},
		{Name: "cm", URL: testenv.Fixture(t, fixtureCM)},
		{Name: "esc", URL: testenv.Fixture(t, fixtureEscaped)},
		{Name: "bad", URL: testenv.Fixture(t, fixtureRefused)},
	}
	return mountFS(t, cfg)
}

func readDirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("readdir %s: %v", dir, err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestMountTableDirs(t *testing.T) {
	mnt := mountFixtures(t, mount.Config{})
	if got, want := readDirNames(t, mnt), []string{nodes.StatusName, "bad", "cm", "dv", "esc"}; !slices.Equal(got, want) {
		t.Fatalf("root lists %v, want %v", got, want)
	}
	for name, fixture := range map[string]string{"dv": fixtureDV, "cm": fixtureCM, "esc": fixtureEscaped} {
		latest := int(testenv.LoadFixtureJSON(t, fixture)["latest_version"].(float64))
		want := []string{"@latest"}
		for v := 0; v <= latest; v++ {
			want = append(want, fmt.Sprintf("@v%d", v))
		}
		want = append(want, "_history.jsonl") // no inbox: fixture mounts are read-only
		got := readDirNames(t, filepath.Join(mnt, name))
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s lists %v, want %v", name, got, want)
		}
		if target, err := os.Readlink(filepath.Join(mnt, name, "@latest")); err != nil || target != fmt.Sprintf("@v%d", latest) {
			t.Errorf("%s/@latest -> %q, %v; want @v%d", name, target, err, latest)
		}
		checkHistory(t, filepath.Join(mnt, name, "_history.jsonl"), latest)
		for _, missing := range []string{fmt.Sprintf("@v%d", latest+1), "@v01", "@latest2", "nosuch", "_deltafs_error.txt"} {
			if _, err := os.Lstat(filepath.Join(mnt, name, missing)); !errors.Is(err, syscall.ENOENT) {
				t.Errorf("stat %s/%s: %v, want ENOENT", name, missing, err)
			}
		}
	}
}

// checkHistory checks that _history.jsonl holds one object per version.
func checkHistory(t *testing.T, path string, latest int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	v := 0
	for ; sc.Scan(); v++ {
		var c struct {
			Version   *int   `json:"version"`
			Timestamp string `json:"timestamp"`
			Operation string `json:"operation"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s line %d: %v", path, v+1, err)
		}
		if c.Version == nil || *c.Version != v || c.Timestamp == "" || c.Operation == "" {
			t.Errorf("%s line %d = %s, want version %d with timestamp and operation", path, v+1, sc.Text(), v)
		}
	}
	if v != latest+1 {
		t.Errorf("%s has %d lines, want %d", path, v, latest+1)
	}
}

func TestMountRefusedTable(t *testing.T) {
	mnt := mountFixtures(t, mount.Config{})
	bad := filepath.Join(mnt, "bad")
	if got := readDirNames(t, bad); !slices.Equal(got, []string{"_deltafs_error.txt"}) {
		t.Fatalf("refused table lists %v", got)
	}
	reason, err := os.ReadFile(filepath.Join(bad, "_deltafs_error.txt"))
	if err != nil || !strings.Contains(string(reason), "blahabl") {
		t.Errorf("reason = %q, %v; want the unknown feature named", reason, err)
	}
	for _, name := range []string{"@v0", "@latest", "@2020-01-01"} {
		if _, err := os.Stat(filepath.Join(bad, name)); !errors.Is(err, syscall.EOPNOTSUPP) {
			t.Errorf("stat bad/%s: %v, want EOPNOTSUPP", name, err)
		}
	}
	// The other tables are served beside it.
	if _, err := os.Stat(filepath.Join(mnt, "dv", "@latest", "part=0")); err != nil {
		t.Errorf("dv beside the refused table: %v", err)
	}
}

// TestMountPlainFilesIdentical reads every file without deletion vector
// of the non-column-mapped tables, through passthrough and through the
// userspace path, and compares it with the table's file.
func TestMountPlainFilesIdentical(t *testing.T) {
	for _, noPT := range []bool{false, true} {
		t.Run(fmt.Sprintf("noPassthrough=%v", noPT), func(t *testing.T) {
			mnt := mountFixtures(t, mount.Config{NoPassthrough: noPT})
			compared := 0
			for name, fixture := range map[string]string{"dv": fixtureDV, "esc": fixtureEscaped} {
				root := testenv.Fixture(t, fixture)
				for p, f := range liveFiles(t, latestSnapshot(t, root)) {
					if f.Add.DeletionVector != nil {
						continue
					}
					got, err := os.ReadFile(filepath.Join(mnt, name, "@latest", p))
					if err != nil {
						t.Fatalf("read %s/%s: %v", name, p, err)
					}
					want, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Key)))
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Errorf("%s/%s: %d bytes differ from the table's %d", name, p, len(got), len(want))
					}
					compared++
				}
			}
			if compared < 4 {
				t.Errorf("compared only %d files", compared)
			}
		})
	}
}

// TestMountDeletionVectors opens every DV'd file of the DV table with
// parquet-go: it must hold numRecords - cardinality rows, its size must be
// exact from the first stat, and the table's rows must add up.
func TestMountDeletionVectors(t *testing.T) {
	mnt := mountFixtures(t, mount.Config{})
	root := testenv.Fixture(t, fixtureDV)
	total, dvFiles := int64(0), 0
	for p, f := range liveFiles(t, latestSnapshot(t, root)) {
		path := filepath.Join(mnt, "dv", "@latest", p)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		rows := parquetRows(t, path, st.Size())
		want, _ := f.Add.NumRecords()
		if f.Add.DeletionVector != nil {
			want -= f.Add.DeletionVector.Cardinality
			dvFiles++
		}
		if rows != want {
			t.Errorf("%s: %d rows, want %d", p, rows, want)
		}
		total += rows
	}
	wantTotal := int64(testenv.LoadFixtureJSON(t, fixtureDV)["live_rows_footer_minus_dv"].(float64))
	if total != wantTotal || dvFiles == 0 {
		t.Errorf("table has %d rows in %d DV'd files, want %d rows", total, dvFiles, wantTotal)
	}
}

// parquetRows reads a whole Parquet file through the mount and counts its
// rows; the stat size must be the number of bytes read.
func parquetRows(t *testing.T, path string, statSize int64) int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if int64(len(data)) != statSize {
		t.Errorf("%s: stat says %d bytes, read %d", path, statSize, len(data))
	}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("parquet %s: %v", path, err)
	}
	rows := int64(0)
	for _, rg := range pf.RowGroups() {
		r := parquet.NewRowGroupReader(rg)
		buf := make([]parquet.Row, 64)
		for {
			n, err := r.ReadRows(buf)
			rows += int64(n)
			if err != nil {
				break
			}
		}
	}
	if rows != pf.NumRows() {
		t.Errorf("%s: read %d rows, footer says %d", path, rows, pf.NumRows())
	}
	return rows
}

// TestMountColumnMapping checks that files of a column-mapped table carry
// the table's logical column names.
func TestMountColumnMapping(t *testing.T) {
	mnt := mountFixtures(t, mount.Config{})
	snap := latestSnapshot(t, testenv.Fixture(t, fixtureCM))
	schema, err := snap.Schema()
	if err != nil {
		t.Fatal(err)
	}
	var logical []string
	for _, f := range schema.Fields {
		logical = append(logical, f.Name)
	}
	for p := range liveFiles(t, snap) {
		data, err := os.ReadFile(filepath.Join(mnt, "cm", "@latest", p))
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("parquet %s: %v", p, err)
		}
		for _, f := range pf.Schema().Fields() {
			if !slices.Contains(logical, f.Name()) {
				t.Errorf("%s: column %q is not a logical name of %v", p, f.Name(), logical)
			}
		}
	}
}

func TestMountReadOnly(t *testing.T) {
	mnt := mountFixtures(t, mount.Config{})
	snapDir := filepath.Join(mnt, "esc", "@v0")
	file := filepath.Join(snapDir, "_2=bar+%2521")
	ents, err := os.ReadDir(file)
	if err != nil || len(ents) == 0 {
		t.Fatalf("readdir %s: %v", file, err)
	}
	file = filepath.Join(file, ents[0].Name())
	for _, tc := range []struct {
		name string
		op   func() error
	}{
		{"create", func() error { return os.WriteFile(filepath.Join(snapDir, "new.parquet"), []byte("x"), 0o644) }},
		{"write", func() error { return os.WriteFile(file, []byte("x"), 0o644) }},
		{"open rw", func() error { f, err := os.OpenFile(file, os.O_RDWR, 0); f.Close(); return err }},
		{"unlink", func() error { return os.Remove(file) }},
		{"rmdir", func() error { return os.Remove(filepath.Dir(file)) }},
		{"mkdir", func() error { return os.Mkdir(filepath.Join(snapDir, "d"), 0o755) }},
		{"mkdir in table", func() error { return os.Mkdir(filepath.Join(mnt, "esc", "@v9"), 0o755) }},
		{"rename", func() error { return os.Rename(file, file+".old") }},
		{"chmod", func() error { return os.Chmod(file, 0o644) }},
		{"truncate", func() error { return os.Truncate(file, 0) }},
		{"symlink", func() error { return os.Symlink("@v0", filepath.Join(mnt, "esc", "@mine")) }},
	} {
		if err := tc.op(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", tc.name, err)
		}
	}
}

// TestMountTimestamps sets the commit times of a copied table and resolves
// @<timestamp> names in every accepted form; @vN's mtime is its commit time.
func TestMountTimestamps(t *testing.T) {
	root := testenv.CopyFixture(t, fixtureEscaped)
	commits := []time.Time{
		time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 1, 12, 0, 0, 0, time.UTC),
		time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC),
	}
	for v, ts := range commits {
		p := filepath.Join(root, "_delta_log", fmt.Sprintf("%020d.json", v))
		if err := os.Chtimes(p, ts, ts); err != nil {
			t.Fatal(err)
		}
	}
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}})
	for name, want := range map[string]string{
		"@2024-01-15":                "@v0",
		"@2024-02-01T12:00:00Z":      "@v1",
		"@2024-02-01T13:59:59+02:00": "@v0",
		"@2024-02-01T14:00:00+02:00": "@v1",
		"@20240301000000000":         "@v2",
		"@2025-06-01":                "@v2",
		"@2023-12-31":                "",
		"@2999-01-01":                "",
		"@yesterday":                 "",
	} {
		got, err := os.Readlink(filepath.Join(mnt, "t", name))
		if want == "" {
			if !errors.Is(err, syscall.ENOENT) {
				t.Errorf("%s -> %q, %v; want ENOENT", name, got, err)
			}
		} else if err != nil || got != want {
			t.Errorf("%s -> %q, %v; want %s", name, got, err, want)
		}
	}
	for v, ts := range commits {
		st, err := os.Stat(filepath.Join(mnt, "t", fmt.Sprintf("@v%d", v)))
		if err != nil || !st.ModTime().Equal(ts) {
			t.Errorf("@v%d mtime = %v, %v; want %v", v, st.ModTime(), err, ts)
		}
	}
	if got := readDirNames(t, filepath.Join(mnt, "t")); slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "@2") }) {
		t.Errorf("timestamps must not be listed: %v", got)
	}
}

// TestMountVacuumedFile removes a live data file from a copied table: the
// read fails with EIO, through both read paths, and the rest is served.
func TestMountVacuumedFile(t *testing.T) {
	root := testenv.CopyFixture(t, fixtureEscaped)
	files := liveFiles(t, latestSnapshot(t, root))
	var gone string
	for p, f := range files {
		gone = p
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(f.Key))); err != nil {
			t.Fatal(err)
		}
		break
	}
	for _, noPT := range []bool{false, true} {
		mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, NoPassthrough: noPT})
		for p := range files {
			_, err := os.ReadFile(filepath.Join(mnt, "t", "@latest", p))
			if p == gone && !errors.Is(err, syscall.EIO) {
				t.Errorf("noPassthrough=%v: read vacuumed %s: %v, want EIO", noPT, p, err)
			}
			if p != gone && err != nil {
				t.Errorf("noPassthrough=%v: read %s: %v", noPT, p, err)
			}
		}
	}
}

// TestMountCorruptDV damages the deletion vector file of a copied table:
// every file with a deletion vector fails with EIO, never wrong rows.
func TestMountCorruptDV(t *testing.T) {
	root := testenv.CopyFixture(t, fixtureDV)
	dvs, _ := filepath.Glob(filepath.Join(root, "deletion_vector_*.bin"))
	if len(dvs) == 0 {
		t.Fatalf("no deletion vector file in %s", root)
	}
	for _, p := range dvs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(data); i++ {
			data[i] ^= 0x5a
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}})
	failed := 0
	for p, f := range liveFiles(t, latestSnapshot(t, root)) {
		_, err := os.ReadFile(filepath.Join(mnt, "t", "@latest", p))
		if f.Add.DeletionVector == nil {
			if err != nil {
				t.Errorf("read %s (no DV): %v", p, err)
			}
			continue
		}
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("read %s with corrupt DV: %v, want EIO", p, err)
		}
		failed++
	}
	if failed == 0 {
		t.Error("no file with a deletion vector was tried")
	}
}

// TestMountLatestMoves commits (puts back) a version while mounted:
// @latest and the listing follow within a few refresh periods.
func TestMountLatestMoves(t *testing.T) {
	root := testenv.CopyFixture(t, fixtureEscaped)
	last := filepath.Join(root, "_delta_log", fmt.Sprintf("%020d.json", 2))
	held := filepath.Join(t.TempDir(), "commit2.json")
	if err := os.Rename(last, held); err != nil {
		t.Fatal(err)
	}
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, Refresh: 100 * time.Millisecond})
	link := filepath.Join(mnt, "t", "@latest")
	if got, err := os.Readlink(link); err != nil || got != "@v1" {
		t.Fatalf("@latest -> %q, %v before the commit; want @v1", got, err)
	}
	if slices.Contains(readDirNames(t, filepath.Join(mnt, "t")), "@v2") {
		t.Fatal("@v2 listed before its commit")
	}
	if err := os.Rename(held, last); err != nil {
		t.Fatal(err)
	}
	if !eventually(5*time.Second, func() bool { got, _ := os.Readlink(link); return got == "@v2" }) {
		t.Error("@latest did not move to @v2")
	}
	if !eventually(5*time.Second, func() bool { return slices.Contains(readDirNames(t, filepath.Join(mnt, "t")), "@v2") }) {
		t.Error("@v2 not listed after its commit")
	}
	if _, err := os.Stat(filepath.Join(mnt, "t", "@latest", "_2=bar+%2523")); err != nil {
		t.Errorf("new partition through @latest: %v", err)
	}
}

func TestMountXAttrs(t *testing.T) {
	root := testenv.Fixture(t, fixtureDV)
	var p string
	var card int64
	for path, f := range liveFiles(t, latestSnapshot(t, root)) {
		if f.Add.DeletionVector != nil {
			p, card = path, f.Add.DeletionVector.Cardinality
			break
		}
	}
	for _, on := range []bool{true, false} {
		mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "dv", URL: root}}, XAttrs: on})
		file := filepath.Join(mnt, "dv", "@latest", p)
		buf := make([]byte, 4096)
		n, err := syscall.Getxattr(file, "user.delta.deletedRows", buf)
		if !on {
			if err == nil {
				t.Errorf("xattrs off: getxattr = %q, want an error", buf[:n])
			}
			continue
		}
		if err != nil || string(buf[:n]) != fmt.Sprint(card) {
			t.Errorf("deletedRows = %q, %v; want %d", buf[:n], err, card)
		}
		n, err = syscall.Getxattr(file, "user.delta.partitionValues", buf)
		if err != nil || !strings.HasPrefix(string(buf[:n]), `{"part":`) {
			t.Errorf("partitionValues = %q, %v", buf[:n], err)
		}
		for _, attr := range []string{"user.delta.numRecords", "user.delta.stats"} {
			if n, err = syscall.Getxattr(file, attr, buf); err != nil || n == 0 {
				t.Errorf("%s = %q, %v", attr, buf[:n], err)
			}
		}
		n, err = syscall.Listxattr(file, buf)
		if err != nil || !strings.Contains(string(buf[:n]), "user.delta.numRecords\x00") {
			t.Errorf("listxattr = %q, %v", buf[:n], err)
		}
	}
}

// TestMountSIGTERM runs `deltafs mount` as a process: it says when the
// mount is ready, serves it, and unmounts cleanly on SIGTERM.
func TestMountSIGTERM(t *testing.T) {
	testenv.RequireFUSE(t)
	bin := filepath.Join(t.TempDir(), "deltafs")
	build := exec.Command("go", "build", "-o", bin, "github.com/deltafs/deltafs/cmd/deltafs")
	build.Dir = testenv.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	mnt := t.TempDir()
	cmd := exec.Command(bin, "mount", "--cache-dir", t.TempDir(), "esc="+testenv.Fixture(t, fixtureEscaped), mnt)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); syscall.Unmount(mnt, syscall.MNT_DETACH) })
	lines := bufio.NewScanner(stderr)
	ready := false
	for !ready && lines.Scan() {
		ready = strings.Contains(lines.Text(), "deltafs: mounted 1 table at "+mnt)
	}
	if !ready {
		t.Fatal("no ready message on stderr")
	}
	go io.Copy(io.Discard, stderr)
	if got, err := os.Readlink(filepath.Join(mnt, "esc", "@latest")); err != nil || got != "@v2" {
		t.Fatalf("@latest -> %q, %v", got, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("deltafs mount exited with %v after SIGTERM", err)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), " "+mnt+" ") {
		t.Errorf("%s still mounted after SIGTERM", mnt)
	}
}
