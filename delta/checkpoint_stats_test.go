package delta

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testenv"
)

// duckJSON runs a query in DuckDB (node API) and returns its rows.
func duckJSON(t *testing.T, sql string) []map[string]any {
	t.Helper()
	dir := testenv.NodeDir(t, "@duckdb/node-api")
	if dir == "" {
		return nil
	}
	const script = `import { DuckDBInstance } from '@duckdb/node-api';
const c = await (await DuckDBInstance.create(':memory:')).connect();
console.log(JSON.stringify((await c.runAndReadAll(process.argv[1])).getRowObjectsJson()));`
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

// A table whose checkpoint holds its stats only as stats_parsed
// (writeStatsAsJson off) keeps them all through a checkpoint deltafs
// writes: compared with what DuckDB reads from the original checkpoint.
func TestCheckpointKeepsStructOnlyStats(t *testing.T) {
	ctx := context.Background()
	root := testenv.CopyFixture(t, "delta-rs/delta-1.2.1-only-struct-stats")
	if root == "" {
		return
	}
	if _, err := os.Stat(filepath.Join(root, "_delta_log")); err != nil {
		root = filepath.Join(root, "table")
	}
	cp := filepath.Join(root, "_delta_log", "00000000000000000010.checkpoint.parquet")
	rows := duckJSON(t, "select add.path p, to_json(add.stats_parsed)::VARCHAR s from read_parquet('"+cp+"') where add is not null")
	if rows == nil {
		return
	}
	store := dirStore{root: root}
	orig, err := Open(store, Options{}).Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCheckpoint(ctx, store, orig); err != nil {
		t.Fatal(err)
	}
	cwTruncateLog(t, root, orig.Version())
	got, err := Open(store, Options{}).Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]*Add{}
	for _, a := range got.Files() {
		byPath[a.Path] = a
	}
	if len(rows) < 5 {
		t.Fatalf("DuckDB found %d adds in the fixture checkpoint", len(rows))
	}
	for _, r := range rows {
		a := byPath[r["p"].(string)]
		if a == nil {
			t.Fatalf("file %v of the fixture's checkpoint is not live after the rewrite", r["p"])
		}
		var want, have map[string]any
		if err := json.Unmarshal([]byte(r["s"].(string)), &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(a.Stats), &have); err != nil {
			t.Fatalf("%s: stats %q: %v", a.Path, a.Stats, err)
		}
		duckToStats(want)
		dropNulls(want)
		if !reflect.DeepEqual(want, have) {
			t.Errorf("%s: stats after the rewrite\n %v\nDuckDB reads from the original stats_parsed\n %v", a.Path, have, want)
		}
	}
}

// duckToStats turns DuckDB's JSON of timestamps ("2022-10-24 22:59:46.083")
// into the stats encoding (ISO with milliseconds and Z) in place.
func duckToStats(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			duckToStats(v)
		case string:
			if len(v) >= 19 && v[4] == '-' && v[10] == ' ' && v[13] == ':' {
				ms := v[19:]
				for len(ms) < 4 {
					if ms == "" {
						ms = "."
					}
					ms += "0"
				}
				m[k] = strings.Replace(v[:19], " ", "T", 1) + ms[:4] + "Z"
			}
		}
	}
}

// dropNulls removes null members (absent statistics) recursively.
func dropNulls(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(v)
			if len(v) == 0 {
				delete(m, k)
			}
		}
	}
}
