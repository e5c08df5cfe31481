package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/testkit/cdfexpect"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// duckdbRows runs a query in DuckDB and returns its rows, each row's
// values as text joined by "|" (nil without DuckDB: the test skips).
func duckdbRows(t *testing.T, sql string) []string {
	t.Helper()
	rows := testenv.DuckDB(t, sql)
	if rows == nil {
		return nil
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.Join(r, "|")
	}
	return out
}

// The change files deltafs changes --out writes give DuckDB exactly the
// rows delta-kernel-rs's tests expect of the same fixture tables
// (kernel/tests/integration/features/cdf.rs, copied with its commit into
// internal/testkit/cdfexpect): CDC files, deletion vector pairs, column
// mapping, partitions, dataChange=false, ranges of one version.
func TestChangesAsKernelExpects(t *testing.T) {
	cases, err := cdfexpect.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s/%s@%d", c.Test, filepath.Base(c.Fixture), c.From)
		t.Run(name, func(t *testing.T) {
			table := testenv.Fixture(t, c.Fixture)
			out := t.TempDir()
			args := []string{"changes", table, strconv.FormatInt(c.From, 10)}
			if c.To != nil {
				args = append(args, strconv.FormatInt(*c.To, 10))
			}
			if _, errOut, code := deltafs(t, append(args, "--out", out)...); code != 0 {
				t.Fatalf("deltafs %s: exit %d: %s", strings.Join(args, " "), code, errOut)
			}
			got := duckdbRows(t, "select "+c.Select()+" from read_parquet('"+out+"/*.parquet')")
			if got == nil {
				return
			}
			if got, want := cdfexpect.Normalize(got), c.Want(); !slices.Equal(got, want) {
				t.Errorf("change rows:\n%s\nwant (kernel-rs %s):\n%s", strings.Join(got, "\n"), c.Test, strings.Join(want, "\n"))
			}
		})
	}
}

// A range the feed cannot answer fails with the reason and writes nothing
// (the error cases of kernel-rs's cdf.rs among them).
func TestChangesRefusedRange(t *testing.T) {
	for _, c := range []struct {
		fixture string
		args    []string
		want    string
	}{
		{"dat/basic_append", []string{"0"}, "change data feed is not enabled"},
		{"delta-kernel-rs/golden-deltalog-getChanges", []string{"0"}, "change data feed is not enabled"},   // Spark's getChanges golden table: no feed
		{"delta-kernel-rs/cdf-column-mapping-name-mode", []string{"0"}, "change data feed is not enabled"}, // enabled at v1
		{"delta-kernel-rs/cdf-table-simple", []string{"1", "0"}, "the range is empty"},                     // invalid_range_end_before_start
		{"delta-kernel-rs/cdf-table-simple", []string{"3", "4"}, "not found"},                              // invalid_range_start_after_last_version_of_table
		// kernel-rs table_changes/mod.rs: table_changes_checks_enable_cdf_flag (the feed is off at
		// version 2) and schema_evolution_fails (a column becomes non-nullable at version 4).
		{"delta-kernel-rs/table-with-cdf", []string{"0", "2"}, "change data feed is not enabled"},
		{"delta-kernel-rs/table-with-cdf", []string{"1", "2"}, "change data feed is not enabled"},
		{"delta-kernel-rs/table-with-cdf", []string{"2", "2"}, "change data feed is not enabled"},
		{"delta-kernel-rs/table-with-cdf", []string{"2", "3"}, "change data feed is not enabled"},
		{"delta-kernel-rs/table-with-cdf", []string{"3", "4"}, "schema"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		args := append(append([]string{"changes", testenv.Fixture(t, c.fixture)}, c.args...), "--out", out)
		_, errOut, code := deltafs(t, args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s %v: exit %d, stderr %q; want a failure saying %q", c.fixture, c.args, code, errOut, c.want)
		}
		if entries, _ := os.ReadDir(out); len(entries) != 0 {
			t.Errorf("%s %v: a refused range wrote %d files", c.fixture, c.args, len(entries))
		}
	}
}

// idRow is a row of cdf-table-simple (one long column, id).
type idRow struct {
	ID *int64 `parquet:"id,optional"`
}

// An append to a table with the change data feed (a blind append: add
// actions only, which the protocol's "Change Data Files" section lets a
// writer commit without CDC files) shows in the feed as inserts of
// exactly the appended rows, at the new version.
func TestAppendShowsAsInserts(t *testing.T) {
	table := testenv.CopyFixture(t, "delta-kernel-rs/cdf-table-simple")
	file := filepath.Join(t.TempDir(), "new.parquet")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[idRow](f)
	var rows []idRow
	for _, id := range []int64{100, 101, 102} {
		rows = append(rows, idRow{ID: &id})
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(w.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := deltafs(t, "append", table, file)
	if code != 0 {
		t.Fatalf("append: exit %d: %s", code, errOut)
	}
	v := strings.TrimSpace(out)
	out, errOut, code = deltafs(t, "changes", table, v, "--json")
	if code != 0 {
		t.Fatalf("changes: exit %d: %s", code, errOut)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			ID      int64  `json:"id"`
			Type    string `json:"_change_type"`
			Version int64  `json:"_commit_version"`
			TS      string `json:"_commit_timestamp"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if r.TS == "" {
			t.Errorf("%q: no _commit_timestamp", line)
		}
		got = append(got, fmt.Sprintf("%d %s v%d", r.ID, r.Type, r.Version))
	}
	slices.Sort(got)
	want := []string{"100 insert v" + v, "101 insert v" + v, "102 insert v" + v}
	if !slices.Equal(got, want) {
		t.Errorf("changes of the appended version: %q, want %q", got, want)
	}
}

// The change rows and in-commit timestamps delta-rs expects of its
// cdc_ict_table (crates/core/src/operations/load_cdf.rs, test_respect_ict:
// versions 2 and 3, a DELETE and an UPDATE with CDC files), through
// deltafs changes --json. (That test names the range by a time before a
// fixture whose in-commit timestamps go backwards at version 1; the rows
// are those of versions 2 and 3, asked for here by version.)
func TestChangesAsDeltaRsExpects(t *testing.T) {
	out, errOut, code := deltafs(t, "changes", testenv.Fixture(t, "delta-rs/cdc_ict_table"), "2", "3", "--json")
	if code != 0 {
		t.Fatalf("changes: exit %d: %s", code, errOut)
	}
	want := []string{
		"Dan|14|1995|delete|2|2026-07-12T16:36:52.175Z",
		"Dave|22|1995|delete|2|2026-07-12T16:36:52.175Z",
		"Kate|36|1995|update_preimage|3|2026-07-12T16:36:53.881Z",
		"Kate|37|1995|update_postimage|3|2026-07-12T16:36:53.881Z",
		"Steve|40|1986|update_preimage|3|2026-07-12T16:36:53.881Z",
		"Steve|41|1986|update_postimage|3|2026-07-12T16:36:53.881Z",
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			Name      string `json:"name"`
			Age       int64  `json:"age"`
			Birthyear int64  `json:"birthyear"`
			Type      string `json:"_change_type"`
			Version   int64  `json:"_commit_version"`
			TS        string `json:"_commit_timestamp"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, fmt.Sprintf("%s|%d|%d|%s|%d|%s", r.Name, r.Age, r.Birthyear, r.Type, r.Version, r.TS))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("changes:\n%s\nwant (delta-rs test_respect_ict):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
