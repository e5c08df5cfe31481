package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/parquet-go/parquet-go"

	dfs "github.com/deltafs/deltafs/fs"
	"github.com/deltafs/deltafs/internal/testenv"
)

// mountFixtures mounts the DV, column-mapping, escaped-partition and
// refused fixtures side by side as dv, cm, esc and bad.
func mountFixtures(t *testing.T, cfg dfs.Config) string {
	t.Helper()
	cfg.Sources = []dfs.Source{
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
	mnt := mountFixtures(t, dfs.Config{})
	if got, want := readDirNames(t, mnt), []string{"bad", "cm", "dv", "esc"}; !slices.Equal(got, want) {
		t.Fatalf("root lists %v, want %v", got, want)
	}
	for name, fixture := range map[string]string{"dv": fixtureDV, "cm": fixtureCM, "esc": fixtureEscaped} {
		latest := int(testenv.LoadFixtureJSON(t, fixture)["latest_version"].(float64))
		want := []string{"@latest"}
		for v := 0; v <= latest; v++ {
			want = append(want, fmt.Sprintf("@v%d", v))
		}
		want = append(want, "_history.jsonl")
		got := readDirNames(t, filepath.Join(mnt, name))
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s lists %v, want %v", name, got, want)
		}
		if target, err := os.Readlink(filepath.Join(mnt, name, "@latest")); err != nil || target != fmt.Sprintf("@v%d", latest) {
			t.Errorf("%s/@latest -> %q, %v; want @v%d", name, target, err, latest)
		}
		checkHistory(t, filepath.Join(mnt, name, "_history.jsonl"), latest)
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
	mnt := mountFixtures(t, dfs.Config{})
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
			mnt := mountFixtures(t, dfs.Config{NoPassthrough: noPT})
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
	mnt := mountFixtures(t, dfs.Config{})
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
	mnt := mountFixtures(t, dfs.Config{})
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
