# export/: the JSONL vs Parquet benchmark. The third-party Parquet reader
# checks' npm packages (DuckDB, hyparquet) come from the scripts/ workspace
# (make scripts-npm).

BENCH_TARGETS += bench-export

.PHONY: bench-export

## bench-export: write/read MB/s and rows/s of JSONL, JSONL.gz and Parquet, with ratios
bench-export:
	@mkdir -p out
	$(GO) test ./export -run '^$$' -bench 'Benchmark(Write|Read|Interleaved)$$' -benchtime 5x -count 1 | tee out/bench-export.txt
	@awk -f scripts/export/ratios.awk out/bench-export.txt
