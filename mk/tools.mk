# tools/: registry, call parsers, executor, built-in tools.
#
#   make test-tools    the tools packages alone, with -race (includes the 10,000-call load test
#                      and the python sandbox tests; needs python3, and root or user namespaces
#                      for the network isolation test, which otherwise skips)
#   make bench-tools   calculator calls/s direct vs through the executor, executor overhead per
#                      call, and how late a hung call's timeout comes (one run, ratios)
#   make fuzz-tools    make fuzz on tools/ only: the calculator, the bracket parser and the
#                      Hermes parser, FUZZTIME each
#   make tools-demo    list the example registry and make one call (the CLI end to end)

BENCH_TARGETS += bench-tools

.PHONY: test-tools bench-tools fuzz-tools tools-demo

## test-tools: the tools packages alone, with -race
test-tools:
	$(GO) test -race -count=1 ./tools/...

## bench-tools: calculator calls/s direct vs through the executor, executor overhead, timeout lateness
bench-tools:
	$(GO) test -run '^$$' -bench . -benchtime 1s ./tools/

## fuzz-tools: make fuzz on tools/ only (calculator, bracket and Hermes parsers), FUZZTIME each
fuzz-tools: FUZZ_PATHS = tools
fuzz-tools: fuzz

## tools-demo: list the example registry and make one call (the CLI end to end)
tools-demo: build
	bin/toolrl tools list --tools tools/testdata/calc.yaml
	bin/toolrl tools call --tools tools/testdata/calc.yaml calculator '{"expression": "123 * 456"}'
	bin/toolrl tools parse --tools tools/testdata/calc.yaml --model models/calc --exec 'So [CALC: 123 * 456]'
