package pqfile

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// duckQuery runs one SQL query in DuckDB (node API) and returns its rows as JSON objects.
func duckQuery(t *testing.T, sql string) []map[string]any {
	t.Helper()
	dir := testenv.NodeDir(t, "@duckdb/node-api")
	const script = `import { DuckDBInstance } from '@duckdb/node-api';
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
const r = await c.runAndReadAll(process.argv[1]);
console.log(JSON.stringify(r.getRowObjectsJson()));`
	cmd := exec.Command("node", "--input-type=module", "-e", script, sql)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb %q: %v\n%s", sql, err, out)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("duckdb output %q: %v", out, err)
	}
	return rows
}

func TestDuckDBReadsOutput(t *testing.T) {
	rows := genRows(2400)
	src := genFile(t, rows, 300, &parquet.Zstd)
	firsts, n := rowGroupBounds(t, src)
	del := caseNamed(t, deletionCases(firsts, n, 5), "all-groups").del // re-encodes every group
	out, _ := rewrite(t, src, del, nil)
	path := filepath.Join(t.TempDir(), "out.parquet")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	var count, sumID, sumTags int64
	for i, r := range rows {
		if !del.Contains(uint64(i)) {
			count, sumID, sumTags = count+1, sumID+r.ID, sumTags+int64(len(r.Tags))
		}
	}
	got := duckQuery(t, "select count(*)::VARCHAR c, sum(id)::VARCHAR s, sum(len(tags))::VARCHAR l, "+
		"sum(len(map_keys(m)))::VARCHAR mk from read_parquet('"+path+"')")
	want := map[string]any{"c": itoa(count), "s": itoa(sumID), "l": itoa(sumTags)}
	for k, v := range want {
		if got[0][k] != v {
			t.Errorf("duckdb %s = %v, want %v", k, got[0][k], v)
		}
	}
}

func TestDuckDBReadsRenamed(t *testing.T) {
	table := testenv.Fixture(t, "delta-kernel-rs/golden-table-with-columnmapping-mode-name")
	toLogical, ids := columnMapping(t, table)
	path := dataFiles(t, table, 1)[0]
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := rewrite(t, src, nil, mappingRename(toLogical, ids))
	outPath := filepath.Join(t.TempDir(), "renamed.parquet")
	if err := os.WriteFile(outPath, out, 0o644); err != nil {
		t.Fatal(err)
	}
	cols := duckQuery(t, "select column_name from (describe select * from read_parquet('"+outPath+"'))")
	var names []string
	for _, c := range cols {
		names = append(names, c["column_name"].(string))
	}
	if len(names) == 0 || strings.Contains(strings.Join(names, ","), "col-") {
		t.Fatalf("duckdb sees columns %v, want logical names", names)
	}
	for _, name := range names {
		if !isLogical(toLogical, name) {
			t.Errorf("duckdb column %q is not a logical name", name)
		}
	}
}

func isLogical(toLogical map[string]string, name string) bool {
	for _, l := range toLogical {
		if l == name {
			return true
		}
	}
	return false
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// caseNamed returns the deletion case called name.
func caseNamed(t *testing.T, cases []deletionCase, name string) deletionCase {
	t.Helper()
	for _, c := range cases {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no deletion case %q", name)
	return deletionCase{}
}
