package integration

// A real outside client reads the mount by path: DuckDB (from npm, run by
// node) globs @latest/**/*.parquet with hive partitioning, and its row
// count and column sums must equal those of the expected content.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// duckdbCases are the tables DuckDB reads through the mount, with the
// integer columns it sums (partition columns included: DuckDB takes them
// from the directory names).
var duckdbCases = []struct {
	name, fixture string
	sum           []string
}{
	{"dv", "delta-kernel-rs/golden-dv-partitioned-with-checkpoint", []string{"col1", "part"}},
	{"dvcm", "delta-kernel-rs/golden-dv-with-columnmapping", []string{"col1", "part"}},
	{"plain", "delta-kernel-rs/golden-basic-with-inserts-updates", []string{"id"}},
}

func TestDuckDBReadsMount(t *testing.T) {
	testenv.RequireFUSE(t)
	nodeDir := testenv.NodeDir(t, "@duckdb/node-api")
	if nodeDir == "" {
		return
	}
	script := filepath.Join(testenv.RepoRoot(t), "scripts", "duckdb-count.mjs")
	var sources []mount.Source
	for _, c := range duckdbCases {
		sources = append(sources, mount.Source{Name: c.name, URL: testenv.Fixture(t, c.fixture)})
	}
	mnt := mountFS(t, mount.Config{Sources: sources})
	for _, c := range duckdbCases {
		t.Run(c.name, func(t *testing.T) {
			wantCount, wantSums, err := expectedSums(testenv.Expected(t, c.fixture, "latest"), c.sum)
			if err != nil {
				t.Fatalf("%s: expected content: %v", c.fixture, err)
			}
			glob := filepath.Join(mnt, c.name, "@latest", "**", "*.parquet")
			got, err := duckdbCount(nodeDir, script, glob, c.sum)
			if err != nil {
				t.Fatal(err)
			}
			if got.Count != wantCount.String() {
				t.Errorf("%s: DuckDB counts %s rows in %s, expected content has %s", c.fixture, got.Count, glob, wantCount)
			}
			for _, col := range c.sum {
				if got.Sums[col] != wantSums[col].String() {
					t.Errorf("%s: DuckDB sum(%s) = %s, expected content gives %s", c.fixture, col, got.Sums[col], wantSums[col])
				}
			}
			t.Logf("%s: DuckDB: %s rows, sums %v", c.fixture, got.Count, got.Sums)
		})
	}
}

// duckdbResult is the JSON line scripts/duckdb-count.mjs prints.
type duckdbResult struct {
	Count string            `json:"count"`
	Sums  map[string]string `json:"sums"`
}

// duckdbCount runs scripts/duckdb-count.mjs on glob from the npm prefix
// dir (where @duckdb/node-api resolves).
func duckdbCount(nodeDir, script, glob string, cols []string) (*duckdbResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script, glob}, cols...)...)
	cmd.Dir = nodeDir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		return nil, fmt.Errorf("node %s %s: %v\n%s", filepath.Base(script), glob, err, stderr)
	}
	var r duckdbResult
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("duckdb-count output %q: %w", out, err)
	}
	return &r, nil
}

// expectedSums reads the expected Parquet content under dir with
// parquet-go and returns its row count and the exact sum of each integer
// column in cols (nulls skipped).
func expectedSums(dir string, cols []string) (*big.Int, map[string]*big.Int, error) {
	paths, err := parquetFiles(dir)
	if err != nil {
		return nil, nil, err
	}
	count, sums := new(big.Int), map[string]*big.Int{}
	for _, c := range cols {
		sums[c] = new(big.Int)
	}
	for _, p := range paths {
		f, err := openParquet(p)
		if err != nil {
			return nil, nil, err
		}
		var bad error
		err = f.each(func(row map[string]any) {
			count.Add(count, big.NewInt(1))
			for _, c := range cols {
				switch v := row[c].(type) {
				case int64:
					sums[c].Add(sums[c], big.NewInt(v))
				case nil:
				default:
					bad = fmt.Errorf("%s: column %s holds %T, not an integer", p, c, v)
				}
			}
		})
		f.Close()
		if err = errors.Join(err, bad); err != nil {
			return nil, nil, err
		}
	}
	return count, sums, nil
}
