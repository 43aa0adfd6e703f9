// Reads a Parquet file with DuckDB (a third-party reader) and prints, as one
// JSON document, the file's key-value metadata, its columns as DuckDB types
// them, and every row. The Go test export/thirdparty_test.go compares each value
// with what toolrl wrote.
//
// usage: node scripts/export/check.mjs FILE.parquet
import { DuckDBInstance } from '@duckdb/node-api';

const file = process.argv[2];
if (!file) {
  console.error('usage: node check.mjs FILE.parquet');
  process.exit(2);
}

const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
const quoted = "'" + file.replaceAll("'", "''") + "'";

const meta = await conn.runAndReadAll(
  `SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata(${quoted})`);
const metadata = Object.fromEntries(meta.getRowObjectsJson().map((r) => [r.key, r.value]));

const desc = await conn.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${quoted})`);
const columns = desc.getRowObjectsJson().map((r) => ({ name: r.column_name, type: r.column_type }));

const rows = await conn.runAndReadAll(`SELECT * FROM read_parquet(${quoted})`);
process.stdout.write(JSON.stringify({ metadata, columns, rows: rows.getRowObjectsJson() }));
process.stdout.write('\n');
