# advantage/serve + stream/: the service-vs-raw Redis benchmark (one run per
# group payload format and record format, groups=json|binary/records=json|binary;
# reports the groups/s ratio to raw and to the floor, and the client and
# redis-server CPU per group of both sides); advantage/offline: offline
# tokens/s. Needs redis-server (make setup).
.PHONY: advantage-bench
BENCH_TARGETS += advantage-bench

advantage-bench:
	$(GO) test ./advantage/serve -run '^$$' -bench 'ServiceVsRaw' -benchtime 3x -count 1
	$(GO) test ./advantage/offline -run '^$$' -bench 'Offline' -benchtime 1x -count 1
