package integration

// No silent gaps: a data file the mount cannot serve still stats, and
// its open fails, so that DuckDB's count over a glob errors instead of
// skipping the file; _history.jsonl has its true size, so DuckDB reads
// it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
	"github.com/deltafs/deltafs/nodes"
)

// duckdbTry runs one query in DuckDB (node API) and returns its rows,
// each value as text, or the error DuckDB gave. ok is false when DuckDB
// is not installed (the test is then skipped).
func duckdbTry(t *testing.T, sql string) (rows [][]string, err error, ok bool) {
	t.Helper()
	dir := testenv.NodeDir(t, "@duckdb/node-api")
	if dir == "" {
		return nil, nil, false
	}
	const script = `import { DuckDBInstance } from '@duckdb/node-api';
const c = await (await DuckDBInstance.create()).connect();
const r = await c.runAndReadAll(process.argv[1]);
console.log(JSON.stringify(r.getRows().map(row => row.map(v => String(v)))));`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--input-type=module", "-e", script, sql)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("%v: %s", err, ee.Stderr), true
		}
		t.Fatalf("duckdb %s: %v", sql, err)
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("duckdb output %q: %v", out, err)
	}
	return rows, nil, true
}

// readTableStatus returns table name's entry of the mount's status file.
func readTableStatus(t *testing.T, mnt, name string) nodes.TableStatus {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(mnt, nodes.StatusName))
	if err != nil {
		t.Fatal(err)
	}
	var st nodes.MountStatus
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("%s: %v", nodes.StatusName, err)
	}
	for _, ts := range st.Tables {
		if ts.Name == name {
			return ts
		}
	}
	t.Fatalf("%s lists no table %s", nodes.StatusName, name)
	return nodes.TableStatus{}
}

// statAll stats every entry under dir (as a glob does) and fails the
// test for any that does not stat; it returns the data files.
func statAll(t *testing.T, dir string) []string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Errorf("walk %s: %v", p, err)
			return nil
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("stat of listed %s: %v", p, err)
		}
		if strings.HasSuffix(p, ".parquet") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// countMustFail checks that DuckDB's count over the table's @latest
// errors, and that the failure is in the status file with its version
// and file.
func countMustFail(t *testing.T, mnt string) {
	t.Helper()
	glob := filepath.Join(mnt, "t", "@latest", "**", "*.parquet")
	rows, err, ok := duckdbTry(t, fmt.Sprintf("select count(*) from read_parquet('%s')", glob))
	if !ok {
		return
	}
	if err == nil {
		t.Fatalf("DuckDB count over %s gave %v, want an error", glob, rows)
	}
	if !strings.Contains(err.Error(), "Input/output error") {
		t.Errorf("DuckDB count over %s: %v; want the open's EIO", glob, err)
	}
	st := readTableStatus(t, mnt, "t")
	if st.DataErrors == 0 || len(st.RecentDataErrors) == 0 {
		t.Fatalf("status of t: %d data errors, recent %v; want the failed open", st.DataErrors, st.RecentDataErrors)
	}
	e := st.RecentDataErrors[len(st.RecentDataErrors)-1]
	if e.Errno != "EIO" || e.File == "" || e.Error == "" || st.Version == nil || e.Version != *st.Version {
		t.Errorf("recent data error %+v: want EIO with the file, the reason and version %v", e, st.Version)
	}
}

// copyWithoutDVs copies the DV fixture and removes its deletion vector
// files.
func copyWithoutDVs(t *testing.T) string {
	t.Helper()
	root := testenv.CopyFixture(t, fixtureDV)
	dvs, _ := filepath.Glob(filepath.Join(root, "deletion_vector_*.bin"))
	if len(dvs) == 0 {
		t.Fatalf("%s: no deletion_vector_*.bin", fixtureDV)
	}
	for _, p := range dvs {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// A DV'd table whose deletion-vector files are gone: every listed file
// stats (with its stored size), and DuckDB's count errors instead of
// counting the files it could read.
func TestDuckDBCountFailsOnMissingDVs(t *testing.T) {
	root := copyWithoutDVs(t)
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, ReadOnly: true})
	if files := statAll(t, filepath.Join(mnt, "t", "@latest")); len(files) == 0 {
		t.Fatal("no data file listed")
	}
	countMustFail(t, mnt)
}

// A table with one data file removed behind the log, for a stored file
// (no DV) and for a rewritten one (with a DV): stat works, DuckDB's
// count errors.
func TestDuckDBCountFailsOnRemovedDataFile(t *testing.T) {
	for _, c := range []struct{ name, fixture string }{
		{"stored", "delta-kernel-rs/golden-basic-with-inserts-updates"},
		{"rewritten", fixtureDV},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := testenv.CopyFixture(t, c.fixture)
			snap := latestSnapshot(t, root)
			removed := ""
			for _, f := range liveFiles(t, snap) {
				if (f.Add.DeletionVector != nil) == (c.name == "rewritten") {
					removed = f.Key
					break
				}
			}
			if removed == "" {
				t.Fatalf("%s: no live file to remove", c.fixture)
			}
			if err := os.Remove(filepath.Join(root, filepath.FromSlash(removed))); err != nil {
				t.Fatal(err)
			}
			mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: root}}, ReadOnly: true})
			statAll(t, filepath.Join(mnt, "t", "@latest"))
			countMustFail(t, mnt)
		})
	}
}

// DuckDB's read_json and read_ndjson_auto over _history.jsonl give one
// row per version, with the versions in order.
func TestDuckDBReadsHistory(t *testing.T) {
	const fixture = "delta-kernel-rs/golden-basic-with-inserts-updates"
	mnt := mountFS(t, mount.Config{Sources: []mount.Source{{Name: "t", URL: testenv.Fixture(t, fixture)}}})
	latest := latestSnapshot(t, testenv.Fixture(t, fixture)).Version()
	p := filepath.Join(mnt, "t", nodes.HistoryName)
	for _, fn := range []string{"read_json", "read_ndjson_auto"} {
		rows, err, ok := duckdbTry(t, fmt.Sprintf("select count(*), min(version), max(version) from %s('%s')", fn, p))
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		want := []string{fmt.Sprint(latest + 1), "0", fmt.Sprint(latest)}
		if len(rows) != 1 || strings.Join(rows[0], ",") != strings.Join(want, ",") {
			t.Errorf("%s over %s: %v, want count, min, max version %v", fn, p, rows, want)
		}
	}
}
