// polars-scan.mjs: read globs of Parquet files with Polars (scanParquet, the
// way a Polars user reads a directory) and report their rows and columns.
//
// Usage: node scripts/polars-scan.mjs < GLOBS.json
// GLOBS.json is a JSON array of glob strings. Prints one JSON line per glob:
// {"rows":N,"columns":["a",...]} or {"error":"..."} when Polars fails (a
// schema mismatch between files, say); it goes on with the next glob.
//
// nodejs-polars is resolved from the working directory first (run it with the
// npm prefix that `make tools` fills, .tools/node, as the cwd).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const pl = createRequire(path.join(process.cwd(), 'noop.js'))('nodejs-polars');
for (const glob of JSON.parse(readFileSync(0, 'utf8'))) {
  try {
    const df = pl.scanParquet(glob).collectSync();
    console.log(JSON.stringify({ rows: df.height, columns: df.columns }));
  } catch (e) {
    console.log(JSON.stringify({ error: String(e && e.message ? e.message : e) }));
  }
}
