package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// duckdbRows runs a query in DuckDB (node API) and returns its rows, each
// row's values as text joined by "|".
func duckdbRows(t *testing.T, sql string) []string {
	t.Helper()
	dir := testenv.NodeDir(t, "@duckdb/node-api")
	if dir == "" {
		return nil
	}
	const script = `import { DuckDBInstance } from '@duckdb/node-api';
const c = await (await DuckDBInstance.create(':memory:')).connect();
const r = await c.runAndReadAll(process.argv[1]);
console.log(JSON.stringify(r.getRows().map(row => row.map(v => String(v)).join('|'))));`
	cmd := exec.Command("node", "--input-type=module", "-e", script, sql)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb %q: %v\n%s", sql, err, out)
	}
	var rows []string
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("duckdb output %q: %v", out, err)
	}
	return rows
}

// The change files deltafs changes --out writes give DuckDB exactly the
// rows delta-kernel-rs's tests expect of the same fixture tables
// (kernel/tests/integration/features/cdf.rs: basic_cdf on cdf-table, whose
// updates wrote CDC files, and cdf_with_deletion_vector on
// cdf-table-with-dv, whose changes are deletion vector pairs), the
// _commit_timestamp column left out as there.
func TestChangesAsKernelExpects(t *testing.T) {
	for _, c := range []struct {
		fixture, cols string
		want          []string
	}{
		{"delta-kernel-rs/cdf-table", "id, name, birthday", []string{
			"1|Steve|2023-12-22|insert|0", "2|Bob|2023-12-23|insert|0", "3|Dave|2023-12-23|insert|0",
			"4|Kate|2023-12-23|insert|0", "5|Emily|2023-12-24|insert|0", "6|Carl|2023-12-24|insert|0",
			"7|Dennis|2023-12-24|insert|0", "8|Claire|2023-12-25|insert|0", "9|Ada|2023-12-25|insert|0",
			"10|Borb|2023-12-25|insert|0",
			"3|Dave|2023-12-22|update_postimage|1", "3|Dave|2023-12-23|update_preimage|1",
			"4|Kate|2023-12-22|update_postimage|1", "4|Kate|2023-12-23|update_preimage|1",
			"2|Bob|2023-12-22|update_postimage|1", "2|Bob|2023-12-23|update_preimage|1",
			"7|Dennis|2023-12-24|update_preimage|2", "7|Dennis|2023-12-29|update_postimage|2",
			"5|Emily|2023-12-24|update_preimage|2", "5|Emily|2023-12-29|update_postimage|2",
			"6|Carl|2023-12-24|update_preimage|2", "6|Carl|2023-12-29|update_postimage|2",
			"7|Dennis|2023-12-29|delete|3",
		}},
		{"delta-kernel-rs/cdf-table-with-dv", "value", []string{
			"0|insert|0", "1|insert|0", "2|insert|0", "3|insert|0", "4|insert|0",
			"5|insert|0", "6|insert|0", "7|insert|0", "8|insert|0", "9|insert|0",
			"0|delete|1", "9|delete|1", "0|insert|2", "9|insert|2",
			"0|delete|3", "1|delete|3", "4|delete|3", "5|delete|3",
			"1|insert|4", "4|insert|4", "3|delete|5", "0|insert|5", "5|insert|5", "3|insert|6",
		}},
	} {
		t.Run(filepath.Base(c.fixture), func(t *testing.T) {
			table := testenv.Fixture(t, c.fixture)
			out := t.TempDir()
			if _, errOut, code := deltafs(t, "changes", table, "0", "--out", out); code != 0 {
				t.Fatalf("deltafs changes: exit %d: %s", code, errOut)
			}
			got := duckdbRows(t, "select "+c.cols+", _change_type, _commit_version from read_parquet('"+out+"/*.parquet')")
			if got == nil {
				return
			}
			want := slices.Clone(c.want)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("change rows:\n%s\nwant (kernel-rs):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// A range the feed cannot answer fails with the reason and writes nothing.
func TestChangesRefusedRange(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	_, errOut, code := deltafs(t, "changes", testenv.Fixture(t, "dat/basic_append"), "0", "--out", out)
	if code == 0 || !strings.Contains(errOut, "change data feed is not enabled") {
		t.Errorf("changes of a table without the feed: exit %d, stderr %q", code, errOut)
	}
	if rows := duckdbRows(t, "select count(*) from glob('"+out+"/*')"); rows != nil && rows[0] != "0" {
		t.Errorf("a refused range wrote %s files", rows[0])
	}
}
