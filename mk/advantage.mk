# advantage/ + stream/: the service-vs-raw Redis benchmark (one run, reports
# the groups/s ratio and the client and redis-server CPU per group of both
# sides) and offline tokens/s. Needs redis-server (make setup).
.PHONY: advantage-bench
BENCH_TARGETS += advantage-bench

advantage-bench:
	$(GO) test ./advantage -run '^$$' -bench 'ServiceVsRaw|Offline' -benchtime 1x -count 1
