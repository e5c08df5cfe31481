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

	"github.com/deltafs/deltafs/internal/testkit/testenv"
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
	// The table says writeStatsAsJson=false, writeStatsAsStruct=true: the
	// new checkpoint holds the same stats_parsed and no JSON stats.
	written := filepath.Join(root, filepath.FromSlash(CheckpointKey(orig.Version())))
	again := map[string]string{}
	for _, r := range duckJSON(t, "select add.path p, to_json(add.stats_parsed)::VARCHAR s, "+
		"(select count(*) from (describe select add from read_parquet('"+written+"')) where column_type like '%stats VARCHAR%') j "+
		"from read_parquet('"+written+"') where add is not null") {
		again[r["p"].(string)] = r["s"].(string)
		if n, _ := r["j"].(string); n != "0" {
			t.Errorf("the checkpoint has a stats column (%v), the table turned JSON stats off", r["j"])
		}
	}
	for _, r := range rows {
		var want, have map[string]any
		json.Unmarshal([]byte(r["s"].(string)), &want)
		json.Unmarshal([]byte(again[r["p"].(string)]), &have)
		dropNulls(want)
		dropNulls(have)
		utcAsLocal(have) // Spark wrote INT96 timestamps, deltafs UTC-adjusted INT64
		if !reflect.DeepEqual(want, have) {
			t.Errorf("%s: stats_parsed written\n %v\nthe fixture's\n %v", r["p"], have, want)
		}
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

// utcAsLocal drops DuckDB's "+00" of UTC-adjusted timestamps in place.
func utcAsLocal(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			utcAsLocal(v)
		case string:
			m[k] = strings.TrimSuffix(v, "+00")
		}
	}
}

// writeStatsAsStruct on a partitioned table: the checkpoint carries
// partitionValues_parsed typed as the partition columns, and stats_parsed.
func TestCheckpointWritesParsedPartitionValues(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"p","type":"integer","nullable":true,"metadata":{}},{"name":"d","type":"date","nullable":true,"metadata":{}}]}`
	meta, _ := json.Marshal(map[string]any{"id": "x", "format": map[string]any{"provider": "parquet", "options": map[string]string{}},
		"schemaString": schema, "partitionColumns": []string{"p", "d"},
		"configuration": map[string]string{"delta.checkpoint.writeStatsAsStruct": "true"}})
	log := `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n" + `{"metaData":` + string(meta) + "}\n" +
		`{"add":{"path":"p=7/d=2024-02-29/a.parquet","partitionValues":{"p":"7","d":"2024-02-29"},"size":1,"modificationTime":1,"dataChange":true,` +
		`"stats":"{\"numRecords\":3,\"minValues\":{\"id\":-4},\"maxValues\":{\"id\":9},\"nullCount\":{\"id\":1}}"}}` + "\n" +
		`{"add":{"path":"p=__HIVE_DEFAULT_PARTITION__/d=2024-03-01/b.parquet","partitionValues":{"p":null,"d":"2024-03-01"},"size":1,"modificationTime":1,"dataChange":true}}` + "\n"
	if err := os.MkdirAll(filepath.Join(root, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(CommitKey(0))), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	store := dirStore{root: root}
	snap, err := Open(store, Options{}).Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCheckpoint(ctx, store, snap); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(root, filepath.FromSlash(CheckpointKey(0)))
	rows := duckJSON(t, "select add.path, add.partitionValues_parsed.p::VARCHAR p, add.partitionValues_parsed.d::VARCHAR d, "+
		"to_json(add.stats_parsed)::VARCHAR s, add.stats is null nojson from read_parquet('"+cp+"') where add is not null order by add.path")
	if rows == nil {
		return
	}
	want := []map[string]any{
		{"path": "p=7/d=2024-02-29/a.parquet", "p": "7", "d": "2024-02-29", "s": `{"numRecords":3,"minValues":{"id":-4},"maxValues":{"id":9},"nullCount":{"id":1},"tightBounds":null}`, "nojson": false},
		{"path": "p=__HIVE_DEFAULT_PARTITION__/d=2024-03-01/b.parquet", "p": nil, "d": "2024-03-01", "s": nil, "nojson": true},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("checkpoint adds as DuckDB reads them:\n %v\nwant\n %v", rows, want)
	}
	cwTruncateLog(t, root, 0)
	got, err := Open(store, Options{}).Latest(ctx)
	if err != nil {
		t.Fatalf("open through the written checkpoint: %v", err)
	}
	cwCompareSnapshots(t, snap, got)
}
