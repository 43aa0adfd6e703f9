// Package export reads and writes toolrl datasets: trajectories and advantage
// records, as JSONL (optionally gzipped) or Parquet, so that trainers load them
// with the tools they already use (Hugging Face datasets, pandas, DuckDB).
//
// The file extension chooses the format: ".jsonl", ".jsonl.gz" or ".parquet".
// JSONL holds one record per line in traj's JSON codec. Parquet holds one row
// per record, zstd-compressed, in row groups of WriterOptions.RowsPerGroup rows,
// with the schema version in the file's key-value metadata under MetaSchema.
// The Parquet columns are documented in docs/export.md and docs/schema.md; the trainer-facing ones
// are input_ids, prompt_len, response_mask, rollout_log_probs, ref_log_prob, advantages,
// kl, reward, reward_<part>, group_id, iteration, sample_index,
// policy_version and segments.
//
// Both formats hold the same values: a record read back from either compares
// equal (reflect.DeepEqual) to what traj's JSON codec decodes from its JSON
// line, empty lists included. Writers validate every record and readers
// validate every record they return, so NaN, ±Inf and broken invariants are
// rejected with the file and line (JSONL) or row (Parquet) named.
//
// Schema v3 renamed loss_mask, old_logprobs and ref_logprobs to
// response_mask, rollout_log_probs and ref_log_prob (the JSON's names, v3
// too). Writers write v3; readers take older files by their columns
// (columnRenames), their records keeping the file's schema version.
//
// Schema v2 added the nullable temperature column and the iteration column
// (INT64, 0 for a plain rollout). Readers also take v1
// files (JSONL lines and Parquet files without those columns, whose records
// read as v1 without temperature, iteration 0) and v2 Parquet files written
// before the iteration column (iteration 0). A v1 record written to Parquet
// reads back as v2 with a null temperature (the file's schema is v2).
//
// Readers also take Parquet files that other tools rewrote (DuckDB, pandas):
// columns are matched by name and, when the toolrl metadata is gone, the kind
// comes from the columns.
//
// Readers and writers are not safe for concurrent use; give each goroutine its
// own or serialise calls.
package export
