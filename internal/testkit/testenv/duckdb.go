package testenv

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"
)

// DuckDB runs one query in DuckDB (the node API that `make tools`
// installs) and returns its rows, each value as DuckDB's text (a null as
// "null"). Without node or the package it skips (a failure under
// DELTAFS_REQUIRE_ALL) and returns nil; a failing query fails the test.
func DuckDB(t testing.TB, sql string) [][]string {
	t.Helper()
	dir := NodeDir(t, "@duckdb/node-api")
	if dir == "" {
		return nil
	}
	const script = `import { DuckDBInstance } from '@duckdb/node-api';
const c = await (await DuckDBInstance.create(':memory:')).connect();
const r = await c.runAndReadAll(process.argv[1]);
console.log(JSON.stringify(r.getRows().map(row => row.map(v => String(v)))));`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--input-type=module", "-e", script, sql)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb %s: %v\n%s", sql, err, out)
	}
	var rows [][]string
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("duckdb output %q: %v", out, err)
	}
	return rows
}
