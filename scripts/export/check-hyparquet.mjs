// Reads a Parquet file with hyparquet (a pure-JavaScript reader, independent
// of DuckDB and of parquet-go) and prints, as one JSON document in the shape
// check.mjs prints, the key-value metadata, the top-level columns and every
// row. 64-bit integers come out as strings (JSON has no BigInt).
//
// usage: node scripts/export/check-hyparquet.mjs FILE.parquet
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';

const path = process.argv[2];
if (!path) {
  console.error('usage: node check-hyparquet.mjs FILE.parquet');
  process.exit(2);
}

const file = await asyncBufferFromFile(path);
const meta = await parquetMetadataAsync(file);
const metadata = Object.fromEntries((meta.key_value_metadata ?? []).map((kv) => [kv.key, kv.value]));
const columns = parquetSchema(meta).children.map((c) => ({ name: c.element.name, type: c.element.type ?? 'group' }));
const rows = await parquetReadObjects({ file, metadata: meta, compressors, utf8: true });

const json = JSON.stringify({ metadata, columns, rows }, (key, value) => {
  if (typeof value === 'bigint') return value.toString();
  if (value === undefined) return null;
  return value;
});
process.stdout.write(json + '\n');
