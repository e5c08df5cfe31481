package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// duckdbQuery runs one query in DuckDB (node API) and returns its rows,
// each value as text.
func duckdbQuery(t *testing.T, sql string) [][]string {
	t.Helper()
	return testenv.DuckDB(t, sql)
}

// A file DuckDB writes with an INTEGER column for the table's long column
// commits through the inbox; the mount then serves it with an INT64
// column (re-encoded while staged), which DuckDB reads as BIGINT.
func TestInboxWidensIntToLong(t *testing.T) {
	if testenv.NodeDir(t, "@duckdb/node-api") == "" {
		return
	}
	root, tdir := mountCopy(t, fixtureAppend, mount.Config{})
	before := latestSnapshot(t, root)
	duckdbRun(t, fmt.Sprintf(`COPY (SELECT 'w' AS letter, i::INTEGER AS number, i / 2 AS a_float FROM range(3) t(i))
		TO '%s' (FORMAT parquet)`, filepath.Join(tdir, "inbox", "narrow.parquet")))
	after := latestSnapshot(t, root)
	if after.Version() != before.Version()+1 {
		t.Fatalf("version %d after the copy, want %d", after.Version(), before.Version()+1)
	}
	old := liveFiles(t, before)
	var added string
	for name := range liveFiles(t, after) {
		if _, ok := old[name]; !ok {
			added = name
		}
	}
	served := filepath.Join(tdir, "@latest", added)
	f, err := os.Open(served)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatalf("open %s through the mount: %v", served, err)
	}
	for _, el := range pf.Metadata().Schema[1:] {
		if el.Name == "number" && el.Type.V.String() != "INT64" {
			t.Errorf("number served as %s, want INT64", el.Type.V)
		}
	}
	rows := duckdbQuery(t, fmt.Sprintf(`SELECT type FROM parquet_schema('%s') WHERE name = 'number'`, served))
	if len(rows) != 1 || rows[0][0] != "INT64" {
		t.Errorf("DuckDB parquet_schema: number is %v, want INT64", rows)
	}
	rows = duckdbQuery(t, fmt.Sprintf(`SELECT typeof(number), sum(number), count(*) FROM read_parquet('%s')
		WHERE letter = 'w' GROUP BY 1`, filepath.Join(tdir, "@latest", "*.parquet")))
	if got := fmt.Sprint(rows); got != "[[BIGINT 3 3]]" {
		t.Errorf("DuckDB over @latest: %s, want [[BIGINT 3 3]]", got)
	}
}

// A file with a BIGINT column for an INTEGER table column is refused with
// a message saying it is a narrowing, and the table is unchanged.
func TestInboxRefusesNarrowing(t *testing.T) {
	if testenv.NodeDir(t, "@duckdb/node-api") == "" {
		return
	}
	root, tdir := mountCopy(t, "delta-rs/delta-stats-optional", mount.Config{})
	before := latestSnapshot(t, root)
	dst := filepath.Join(tdir, "inbox", "wide.parquet")
	src := filepath.Join(t.TempDir(), "wide.parquet")
	duckdbRun(t, fmt.Sprintf(`COPY (SELECT 1::BIGINT AS integer) TO '%s' (FORMAT parquet)`, src))
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	err = os.WriteFile(dst, data, 0o644)
	if err == nil {
		t.Fatal("a BIGINT file for an integer column was accepted")
	}
	checkUnchanged(t, root, before)
	status, _ := os.ReadFile(filepath.Join(tdir, "inbox", "_status.jsonl"))
	if !strings.Contains(string(status), "narrowing long to integer could lose values") {
		t.Errorf("_status.jsonl does not say it is a narrowing:\n%s", status)
	}
}
