# export/: the npm packages of the third-party Parquet reader checks (DuckDB,
# hyparquet), and the JSONL vs Parquet benchmark.

EXPORT_NPM_STAMP := scripts/export/node_modules/.toolrl-installed

TEST_DEPS += export-npm
BENCH_TARGETS += bench-export

.PHONY: export-npm bench-export

## export-npm: DuckDB and hyparquet for node (exact versions from scripts/export/package-lock.json)
export-npm: $(EXPORT_NPM_STAMP)

$(EXPORT_NPM_STAMP): scripts/export/package.json scripts/export/package-lock.json
	@echo "export: installing @duckdb/node-api and hyparquet into scripts/export for the Parquet reader checks"
	@npm ci --prefix scripts/export --no-audit --no-fund --silent
	@touch $@

## bench-export: write/read MB/s and rows/s of JSONL, JSONL.gz and Parquet, with ratios
bench-export:
	@mkdir -p out
	$(GO) test ./export -run '^$$' -bench 'Benchmark(Write|Read|Interleaved)$$' -benchtime 5x -count 1 | tee out/bench-export.txt
	@awk -f scripts/export/ratios.awk out/bench-export.txt
