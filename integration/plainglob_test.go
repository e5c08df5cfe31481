package integration

// What a plain reader sees is the table: DuckDB globs every version of
// every shared fixture with expected content the way the user guide shows
// (read_parquet('@vN/**/*.parquet'), no union_by_name, no Hive parsing)
// and its rows must be the expected rows, compared as multisets of their
// text forms.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit/testenv"
	"github.com/deltafs/deltafs/mount"
)

// duckdbOutcome is one statement's result from scripts/duckdb-query.mjs.
type duckdbOutcome struct {
	Rows  [][]*string `json:"rows"`
	Error string      `json:"error"`
}

// duckdbQueries runs sqls in one DuckDB session and returns each outcome.
func duckdbQueries(t testing.TB, sqls []string) []duckdbOutcome {
	t.Helper()
	return runNodeScript[duckdbOutcome](t, "@duckdb/node-api", "duckdb-query.mjs", sqls)
}

// polarsOutcome is one glob's result from scripts/polars-scan.mjs.
type polarsOutcome struct {
	Rows    int64    `json:"rows"`
	Columns []string `json:"columns"`
	Error   string   `json:"error"`
}

// polarsScans reads each glob with Polars' scanParquet.
func polarsScans(t testing.TB, globs []string) []polarsOutcome {
	t.Helper()
	return runNodeScript[polarsOutcome](t, "nodejs-polars", "polars-scan.mjs", globs)
}

// runNodeScript runs scripts/NAME with node from the npm prefix holding
// pkg, hands it inputs as a JSON array on stdin and returns its JSON
// lines, one per input.
func runNodeScript[O any](t testing.TB, pkg, name string, inputs []string) []O {
	t.Helper()
	nodeDir := testenv.NodeDir(t, pkg)
	if nodeDir == "" {
		t.FailNow()
	}
	in, err := json.Marshal(inputs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(testenv.RepoRoot(t), "scripts", name))
	cmd.Dir = nodeDir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", name, err, stderr.Bytes())
	}
	var res []O
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var o O
		if err := dec.Decode(&o); err != nil {
			t.Fatalf("%s output: %v", name, err)
		}
		res = append(res, o)
	}
	if len(res) != len(inputs) {
		t.Fatalf("%s answered %d of %d inputs\n%s", name, len(res), len(inputs), stderr.Bytes())
	}
	return res
}

// sqlStr quotes s as a SQL string literal.
func sqlStr(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sqlIdent quotes s as a SQL identifier.
func sqlIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// globCase is one version of one fixture read through a plain glob.
type globCase struct {
	fixture, version string
	expected         string // expected/<version> directory
	glob             string // MOUNT/<table>/@<version>/**/*.parquet
	partitions       []string
}

// textColumns returns the select list that renders each column as text:
// timestamps with a zone as UTC wall time first, so that a writer's INT96
// (no zone) and a served timestamp (UTC-adjusted) compare equal.
func textColumns(cols map[string]string, names []string) string {
	var sel []string
	for _, c := range names {
		e := sqlIdent(c)
		if cols[c] == "TIMESTAMP WITH TIME ZONE" {
			e = "CAST(" + e + " AS TIMESTAMP)"
		}
		sel = append(sel, "CAST("+e+" AS VARCHAR) AS "+sqlIdent(c))
	}
	return strings.Join(sel, ", ")
}

// plainGlobSQL returns the statement that compares the glob's rows with
// the expected rows over names: the two counts and the rows each has that
// the other lacks.
func plainGlobSQL(c globCase, cols map[string]string, names []string) string {
	sel := textColumns(cols, names)
	got := fmt.Sprintf("SELECT %s FROM read_parquet(%s, hive_partitioning = false)", sel, sqlStr(c.glob))
	want := fmt.Sprintf("SELECT %s FROM read_parquet(%s, hive_partitioning = false)", sel,
		sqlStr(filepath.Join(c.expected, "**", "*.parquet")))
	return fmt.Sprintf("WITH g AS (%s), w AS (%s) SELECT (SELECT count(*) FROM g), (SELECT count(*) FROM w), "+
		"(SELECT count(*) FROM (FROM g EXCEPT ALL FROM w)), (SELECT count(*) FROM (FROM w EXCEPT ALL FROM g))", got, want)
}

// expectedColumns returns the column names and DuckDB types of each
// case's expected content, in one DuckDB session.
func expectedColumns(t *testing.T, cases []globCase) []map[string]string {
	var sqls []string
	for _, c := range cases {
		sqls = append(sqls, fmt.Sprintf("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(%s, hive_partitioning = false))",
			sqlStr(filepath.Join(c.expected, "**", "*.parquet"))))
	}
	var out []map[string]string
	for i, o := range duckdbQueries(t, sqls) {
		if o.Error != "" {
			t.Fatalf("%s@%s: describe expected content: %s", cases[i].fixture, cases[i].version, o.Error)
		}
		cols := map[string]string{}
		for _, r := range o.Rows {
			cols[*r[0]] = *r[1]
		}
		out = append(out, cols)
	}
	return out
}

// expectedEmpty reports, per case, whether its expected content has no rows.
func expectedEmpty(t *testing.T, cases []globCase) []bool {
	var sqls []string
	for _, c := range cases {
		sqls = append(sqls, fmt.Sprintf("SELECT count(*) FROM read_parquet(%s)", sqlStr(filepath.Join(c.expected, "**", "*.parquet"))))
	}
	var out []bool
	for i, o := range duckdbQueries(t, sqls) {
		if o.Error != "" {
			t.Fatalf("%s@%s: count expected rows: %s", cases[i].fixture, cases[i].version, o.Error)
		}
		out = append(out, *o.Rows[0][0] == "0")
	}
	return out
}

// checkPlainGlobs reads every case with DuckDB and reports each version
// whose glob fails or whose rows differ from the expected ones. With
// partitionsInFiles the served files carry the partition columns and all
// columns are compared; without, only the columns the data files hold.
func checkPlainGlobs(t *testing.T, cases []globCase, partitionsInFiles bool) {
	colsOf := expectedColumns(t, cases)
	emptyExpected := expectedEmpty(t, cases)
	var sqls []string
	for i, c := range cases {
		names := slices.Sorted(maps.Keys(colsOf[i]))
		// The fixtures of partitionTimeZone hold timestamp partition values in
		// the writer's zone, which the log does not name: the mount reads them
		// as UTC, as the protocol's "Partition Value Serialization" says.
		if !partitionsInFiles || partitionTimeZone[c.fixture] != "" {
			names = slices.DeleteFunc(names, func(n string) bool { return slices.Contains(c.partitions, n) })
		}
		sqls = append(sqls, plainGlobSQL(c, colsOf[i], names))
	}
	passed := 0
	for i, o := range duckdbQueries(t, sqls) {
		c := cases[i]
		if o.Error != "" {
			if strings.Contains(o.Error, "No files found") && emptyExpected[i] {
				passed++ // an empty snapshot is an empty directory, as DuckDB says
				continue
			}
			t.Errorf("%s@%s: DuckDB read_parquet(%s): %s", c.fixture, c.version, c.glob, o.Error)
			continue
		}
		r := o.Rows[0]
		if *r[0] != *r[1] || *r[2] != "0" || *r[3] != "0" {
			t.Errorf("%s@%s: DuckDB reads %s rows through the mount, expected %s; %s served rows are not expected, %s expected rows are missing",
				c.fixture, c.version, *r[0], *r[1], *r[2], *r[3])
			continue
		}
		passed++
	}
	t.Logf("plain glob: %d of %d table versions read as expected (partition columns in files: %v)", passed, len(cases), partitionsInFiles)
	checkPolars(t, cases, colsOf, emptyExpected, partitionsInFiles)
}

// checkPolars reads every case with Polars, the second plain reader: it
// must read the expected number of rows with every expected column (the
// partition columns only when the files carry them), or, for an empty
// snapshot, find no files.
func checkPolars(t *testing.T, cases []globCase, colsOf []map[string]string, empty []bool, partitionsInFiles bool) {
	var globs, counts []string
	for _, c := range cases {
		globs = append(globs, c.glob)
		counts = append(counts, fmt.Sprintf("SELECT count(*) FROM read_parquet(%s)", sqlStr(filepath.Join(c.expected, "**", "*.parquet"))))
	}
	want := duckdbQueries(t, counts)
	passed := 0
	for i, o := range polarsScans(t, globs) {
		c := cases[i]
		if o.Error != "" {
			if !empty[i] {
				t.Errorf("%s@%s: Polars scanParquet(%s): %s", c.fixture, c.version, c.glob, o.Error)
			} else {
				passed++
			}
			continue
		}
		var missing []string
		for col := range colsOf[i] {
			if (partitionsInFiles || !slices.Contains(c.partitions, col)) && !slices.Contains(o.Columns, col) {
				missing = append(missing, col)
			}
		}
		if fmt.Sprint(o.Rows) != *want[i].Rows[0][0] || len(missing) > 0 {
			t.Errorf("%s@%s: Polars reads %d rows, expected %s; columns %q, missing %q", c.fixture, c.version, o.Rows, *want[i].Rows[0][0], o.Columns, missing)
			continue
		}
		passed++
	}
	t.Logf("Polars: %d of %d table versions read as expected", passed, len(cases))
}

// fixtureGlobCases mounts every fixture with expected content in one mount
// and returns a case per expected version.
func fixtureGlobCases(t *testing.T, cfg mount.Config) []globCase {
	tables := conformanceTables(t)
	names := slices.Sorted(maps.Keys(tables))
	for i, name := range names {
		cfg.Sources = append(cfg.Sources, mount.Source{Name: fmt.Sprintf("t%03d", i), URL: testenv.Fixture(t, name)})
	}
	mnt := mountFS(t, cfg)
	var cases []globCase
	for i, name := range names {
		var parts []string
		if ps, ok := testenv.LoadFixtureJSON(t, name)["partition_columns"].([]any); ok {
			for _, p := range ps {
				parts = append(parts, fmt.Sprint(p))
			}
		}
		for _, v := range tables[name] {
			cases = append(cases, globCase{
				fixture: name, version: v, expected: testenv.Expected(t, name, v), partitions: parts,
				glob: filepath.Join(mnt, fmt.Sprintf("t%03d", i), "@"+v, "**", "*.parquet"),
			})
		}
	}
	return cases
}

func TestPlainGlobFixtures(t *testing.T) {
	testenv.RequireFUSE(t)
	t.Run("partitions-in-names", func(t *testing.T) {
		checkPlainGlobs(t, fixtureGlobCases(t, mount.Config{}), false)
	})
	t.Run("partitions-in-files", func(t *testing.T) {
		checkPlainGlobs(t, fixtureGlobCases(t, mount.Config{PartitionColumns: true}), true)
	})
}

// TestPlainGlobAfterAppends: files appended through the inbox without a
// nullable column, with their columns in another order, with a narrower
// integer type, and a table whose schema then grows (a metadata commit
// adding a column): a plain DuckDB glob over @latest, in either name
// order, sees the table's columns in the schema's order and every row.
func TestPlainGlobAfterAppends(t *testing.T) {
	testenv.RequireFUSE(t)
	root, tdir := mountCopy(t, fixtureAppend, mount.Config{})
	inbox := filepath.Join(tdir, "inbox")
	// The fixture holds 5 rows: numbers 1..5, a_float never null.
	duckdbRun(t, fmt.Sprintf(`COPY (SELECT 'x' AS letter, 10 AS number) TO '%s' (FORMAT parquet)`,
		filepath.Join(inbox, "aaa-missing-a_float.parquet")))
	duckdbRun(t, fmt.Sprintf(`COPY (SELECT 2.5::DOUBLE AS a_float, 20 AS number, 'y' AS letter) TO '%s' (FORMAT parquet)`,
		filepath.Join(inbox, "zzz-reordered.parquet")))
	duckdbRun(t, fmt.Sprintf(`COPY (SELECT 'w' AS letter, 30::INTEGER AS number) TO '%s' (FORMAT parquet)`,
		filepath.Join(inbox, "mmm-narrow-number.parquet")))
	grow(t, root, `{"name":"extra","type":"long","nullable":true,"metadata":{}}`)
	want := latestSnapshot(t, root).Version()
	if !eventually(10*time.Second, func() bool {
		target, err := os.Readlink(filepath.Join(tdir, "@latest"))
		return err == nil && target == fmt.Sprintf("@v%d", want)
	}) {
		t.Fatalf("@latest does not reach v%d", want)
	}
	files, err := filepath.Glob(filepath.Join(tdir, "@latest", "*.parquet"))
	if err != nil || len(files) != 5 {
		t.Fatalf("@latest holds %d files (%v), want 5", len(files), err)
	}
	// DuckDB takes the schema from the first file it reads: both orders put
	// an appended file first once, a Spark-written one the other time.
	var sqls []string
	for _, desc := range []bool{false, true} {
		slices.Sort(files)
		if desc {
			slices.Reverse(files)
		}
		var quoted []string
		for _, f := range files {
			quoted = append(quoted, sqlStr(f))
		}
		list := "[" + strings.Join(quoted, ", ") + "]"
		sqls = append(sqls,
			fmt.Sprintf(`SELECT column_name FROM (DESCRIBE SELECT * FROM read_parquet(%s))`, list),
			fmt.Sprintf(`SELECT count(*), count(a_float), sum(number), count(extra), typeof(number) FROM read_parquet(%s) GROUP BY ALL`, list))
	}
	for i, o := range duckdbQueries(t, sqls) {
		if o.Error != "" {
			t.Fatalf("DuckDB over @latest: %s", o.Error)
		}
		var got []string
		for _, r := range o.Rows {
			for _, v := range r {
				got = append(got, fmt.Sprint(*v))
			}
		}
		want := "letter,number,a_float,extra"
		if i%2 == 1 {
			want = "8,6,75,0,BIGINT"
		}
		if strings.Join(got, ",") != want {
			t.Errorf("DuckDB query %d over @latest: %s, want %s", i, strings.Join(got, ","), want)
		}
	}
}

// grow commits a metadata action adding field (a Delta schema field's
// JSON) to the table at root, as ALTER TABLE ADD COLUMN does.
func grow(t *testing.T, root, field string) {
	t.Helper()
	snap := latestSnapshot(t, root)
	md := *snap.Metadata()
	md.SchemaString = strings.TrimSuffix(md.SchemaString, "]}") + "," + field + "]}"
	line, err := json.Marshal(map[string]any{"metaData": md})
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(root, "_delta_log", fmt.Sprintf("%020d.json", snap.Version()+1))
	if err := os.WriteFile(name, append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
