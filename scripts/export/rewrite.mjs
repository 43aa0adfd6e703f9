// Rewrites a Parquet file through DuckDB, as a user who filters a toolrl
// dataset in DuckDB and saves the result would: DuckDB's own writer, its own
// column types and nullability, and none of toolrl's key-value metadata.
// The Go test export/thirdparty_test.go reads the result back with toolrl.
//
// usage: node scripts/export/rewrite.mjs IN.parquet OUT.parquet
import { DuckDBInstance } from '@duckdb/node-api';

const [src, dst] = process.argv.slice(2);
if (!src || !dst) {
  console.error('usage: node rewrite.mjs IN.parquet OUT.parquet');
  process.exit(2);
}
const quote = (s) => "'" + s.replaceAll("'", "''") + "'";
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
await conn.run(`COPY (SELECT * FROM read_parquet(${quote(src)})) TO ${quote(dst)} (FORMAT parquet, COMPRESSION zstd)`);
