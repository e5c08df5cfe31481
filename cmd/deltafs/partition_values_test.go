package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/testkit/testenv"
)

// duckdbExec runs SQL statements in DuckDB (node API).
func duckdbExec(t *testing.T, sql string) {
	t.Helper()
	dir := testenv.NodeDir(t, "@duckdb/node-api")
	if dir == "" {
		return
	}
	const script = `import { DuckDBInstance } from '@duckdb/node-api';
const c = await (await DuckDBInstance.create(':memory:')).connect();
await c.run(process.argv[1]);`
	cmd := exec.Command("node", "--input-type=module", "-e", script, sql)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("duckdb %q: %v\n%s", sql, err, out)
	}
}

// lastAddPartition reads the letter partition value of the single add of
// the table's newest commit (nil for a JSON null).
func lastAddPartition(t *testing.T, table string, v int64) (value *string, path string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(table, filepath.FromSlash(delta.CommitKey(v))))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var a struct {
			Add *struct {
				Path            string             `json:"path"`
				PartitionValues map[string]*string `json:"partitionValues"`
			} `json:"add"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatal(err)
		}
		if a.Add != nil {
			return a.Add.PartitionValues["letter"], a.Add.Path
		}
	}
	t.Fatalf("commit %d has no add", v)
	return nil, ""
}

// TestAppendPartitionValuesDuckDBLayout: DuckDB's
// COPY ... PARTITION_BY percent-encodes the UTF-8 bytes of a non-ASCII
// value ("ünï" is letter=%C3%BCn%C3%AF); the commit must hold "ünï", not the
// Latin-1 reading "Ã¼nÃ¯", and the data file's directory must be the one
// Spark would write (non-ASCII unescaped: ExternalCatalogUtils.escapePathName).
func TestAppendPartitionValuesDuckDBLayout(t *testing.T) {
	table := testenv.CopyFixture(t, "dat/basic_partitioned")
	staging := filepath.Join(t.TempDir(), "staging")
	duckdbExec(t, "COPY (SELECT 'ünï' AS letter, 7::BIGINT AS number, 1.5::DOUBLE AS a_float) TO '"+staging+
		"' (FORMAT parquet, PARTITION_BY (letter))")
	files, _ := filepath.Glob(filepath.Join(staging, "*", "*.parquet"))
	if len(files) != 1 {
		t.Fatalf("DuckDB wrote %v", files)
	}
	if dir := filepath.Base(filepath.Dir(files[0])); dir == "letter=ünï" {
		t.Logf("DuckDB did not escape the value (%s): the decoding is not exercised", dir)
	}
	out, errOut, code := deltafs(t, "append", table, files[0])
	if code != 0 {
		t.Fatalf("append: exit %d: %s", code, errOut)
	}
	if strings.TrimSpace(out) != "2" {
		t.Fatalf("append printed %q, want version 2", out)
	}
	got, path := lastAddPartition(t, table, 2)
	if got == nil || *got != "ünï" {
		t.Fatalf("committed letter = %v, want \"ünï\" (DuckDB dir %s)", deref(got), filepath.Base(filepath.Dir(files[0])))
	}
	if !strings.HasPrefix(path, "letter=%C3%BCn%C3%AF/") && !strings.HasPrefix(path, "letter=ünï/") {
		t.Errorf("data file path %q is not under Spark's directory letter=ünï/", path)
	}
}

// TestAppendPartitionValuesRefusedAndNull: invalid UTF-8 in a directory
// name (raw or %XX) is refused with the reason instead of being committed
// as U+FFFD; __HIVE_DEFAULT_PARTITION__ given with --partition means null,
// as the same token does as a directory.
func TestAppendPartitionValuesRefusedAndNull(t *testing.T) {
	table := testenv.CopyFixture(t, "dat/basic_partitioned")
	dir := t.TempDir()
	for i, seg := range []string{"letter=%E9t%E9", "letter=\xe9t\xe9", "letter=%C3"} {
		f := filepath.Join(dir, string(rune('a'+i)), seg, "x.parquet")
		writeRows(t, f, one(1))
		_, errOut, code := deltafs(t, "append", table, f)
		if code == 0 || !strings.Contains(errOut, "UTF-8") {
			t.Errorf("append under %q: exit %d, stderr %q; want a refusal naming UTF-8", seg, code, errOut)
		}
	}
	f := filepath.Join(dir, "flag.parquet")
	writeRows(t, f, one(2))
	if _, errOut, code := deltafs(t, "append", table, "--partition", "letter="+delta.HiveDefaultPartition, f); code != 0 {
		t.Fatalf("append --partition letter=%s: exit %d: %s", delta.HiveDefaultPartition, code, errOut)
	}
	got, path := lastAddPartition(t, table, 2)
	if got != nil {
		t.Errorf("--partition letter=%s committed %q, want null", delta.HiveDefaultPartition, *got)
	}
	if !strings.HasPrefix(path, "letter=__HIVE_DEFAULT_PARTITION__/") {
		t.Errorf("null partition file at %q", path)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
