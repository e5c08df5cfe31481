// duckdb-query.mjs: run SQL statements with DuckDB and print their results.
//
// Usage: node scripts/duckdb-query.mjs < QUERIES.json
// QUERIES.json is a JSON array of SQL strings, run in order on one in-memory
// database (so a SET applies to the statements after it). Prints one JSON
// line per statement: {"rows":[[...],...]} with every value as a string (or
// null), or {"error":"..."} when the statement fails; the script goes on with
// the next statement either way. Exits non-zero only when it cannot run at all.
//
// @duckdb/node-api is resolved from the working directory first (run it with
// the npm prefix that `make tools` fills, .tools/node, as the cwd), then from
// this script's location (a `npm install` at the repo root).
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
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

const queries = JSON.parse(readFileSync(0, 'utf8'));
const { DuckDBInstance } = loadDuckDB();
const conn = await (await DuckDBInstance.create(':memory:')).connect();
const str = (v) => (v === null || v === undefined ? null : String(v));
for (const sql of queries) {
  try {
    const rows = (await conn.runAndReadAll(sql)).getRows().map((r) => r.map(str));
    console.log(JSON.stringify({ rows }));
  } catch (e) {
    console.log(JSON.stringify({ error: String(e && e.message ? e.message : e) }));
  }
}
