// duckdb-count.mjs: count the rows of a glob of Parquet files with DuckDB
// (hive partitioning on, as a legacy tool reads a partitioned directory) and
// sum the named columns.
//
// Usage: node scripts/duckdb-count.mjs GLOB [COLUMN...]
// Prints one JSON line: {"count":"N","sums":{"COLUMN":"S",...}}, numbers as
// strings (exact for BIGINT and HUGEINT). Exits non-zero on any error.
//
// @duckdb/node-api is resolved from the working directory first (run it with
// the npm prefix that `make tools` fills, .tools/node, as the cwd), then from
// this script's location (a `npm install` at the repo root).
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

function loadDuckDB() {
  const bases = [path.join(process.cwd(), 'noop.js'), import.meta.url];
  for (const base of bases) {
    try {
      return createRequire(base)('@duckdb/node-api');
    } catch (e) {
      if (e.code !== 'MODULE_NOT_FOUND') throw e;
    }
  }
  throw new Error(`@duckdb/node-api not found from ${process.cwd()} nor ${path.dirname(fileURLToPath(import.meta.url))}`);
}

const sqlString = (s) => "'" + s.replaceAll("'", "''") + "'";
const sqlIdent = (s) => '"' + s.replaceAll('"', '""') + '"';

const [glob, ...columns] = process.argv.slice(2);
if (!glob) {
  console.error('usage: node duckdb-count.mjs GLOB [COLUMN...]');
  process.exit(2);
}
const { DuckDBInstance } = loadDuckDB();
const conn = await (await DuckDBInstance.create(':memory:')).connect();
const selects = ['count(*)::VARCHAR', ...columns.map((c) => `sum(${sqlIdent(c)})::VARCHAR`)];
const sql = `SELECT ${selects.join(', ')} FROM read_parquet(${sqlString(glob)}, hive_partitioning = true)`;
const row = (await conn.runAndReadAll(sql)).getRows()[0];
const sums = Object.fromEntries(columns.map((c, i) => [c, row[i + 1]]));
console.log(JSON.stringify({ count: row[0], sums }));
