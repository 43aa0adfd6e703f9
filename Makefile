# toolrl — every target installs what it needs; nothing is installed by hand.
SHELL := /bin/bash
.DEFAULT_GOAL := build

GO        ?= go
ORT_VERSION := 1.30.0
DEPS      := .deps
ORT_DIR   := $(DEPS)/onnxruntime
ORT_LIB   := $(ORT_DIR)/libonnxruntime.so.1
export ONNXRUNTIME_LIB ?= $(abspath $(ORT_LIB))
export ONNXRUNTIME_NODE_INSTALL := skip

# Packages whose tests run with -race: everything concurrent. The actor,
# models and tokenizer packages run long numeric tests, so they run without
# -race (their concurrency is ORT's own, or none).
RACE_PATTERNS = ./traj/... ./tools/... ./orchestrator/... ./prompt/... ./sink/... ./advantage/... ./stream/... ./export/... ./internal/... ./learner/... ./policystore/... ./trainer/...
RACE_PKGS  = $(shell $(GO) list $(RACE_PATTERNS) 2>/dev/null)
PLAIN_PKGS = $(filter-out $(RACE_PKGS),$(shell $(GO) list ./... 2>/dev/null | grep -v "/out/"))

# Area makefiles append to these.
TEST_DEPS :=
BENCH_TARGETS :=

-include mk/*.mk

.PHONY: help setup ort redis build test lint bench fuzz clean run

## help: this list, from the "## target: what" comments of Makefile and mk/*.mk
help:
	@awk '/^## [A-Za-z0-9_.-]+: / { sub(/^## /, ""); i = index($$0, ": "); printf "  %-22s %s\n", substr($$0, 1, i - 1), substr($$0, i + 2) }' $(filter Makefile mk/%.mk,$(MAKEFILE_LIST))

## setup: the ONNX Runtime library (from npm onnxruntime-node), redis-server, promtool (mk/metrics.mk) and OpenBLAS (mk/learner.mk)
setup: ort redis

ort: $(ORT_LIB)

$(ORT_LIB):
	@mkdir -p $(ORT_DIR)/pack
	@echo "setup: fetching onnxruntime-node@$(ORT_VERSION) from npm for libonnxruntime.so.1"
	@cd $(ORT_DIR)/pack && npm pack --silent onnxruntime-node@$(ORT_VERSION) >/dev/null
	@tar -xzf $(ORT_DIR)/pack/onnxruntime-node-$(ORT_VERSION).tgz -C $(ORT_DIR)/pack package/bin/napi-v6/linux/x64/
	@cp $(ORT_DIR)/pack/package/bin/napi-v6/linux/x64/libonnxruntime.so.1 $@
	@rm -rf $(ORT_DIR)/pack
	@echo "setup: $@ ready"

redis:
	@if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then \
		echo "setup: installing redis-server and redis-tools with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null; \
		systemctl disable --now redis-server >/dev/null 2>&1 || service redis-server stop >/dev/null 2>&1 || true; \
	fi

## build: bin/toolrl
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# The commit, for toolrl_build_info: passed here because builds under
# GOFLAGS=-buildvcs=false carry no vcs.revision of their own.
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)

build:
	@mkdir -p bin
	GOEXPERIMENT=simd $(GO) build -ldflags "-X main.version=$(VERSION) -X main.revision=$(REVISION)" -o bin/toolrl ./cmd/toolrl

## test: setup, then the whole suite (-race on the concurrent packages)
test: setup $(TEST_DEPS)
	$(GO) vet ./...
	$(GO) test -race -count=1 $(RACE_PKGS)
	$(GO) test -count=1 $(PLAIN_PKGS)
	GOEXPERIMENT=simd $(GO) test -count=1 ./model/train

# staticcheck is installed by `make lint` into .deps (its version in the path,
# so that a new version is installed beside the old one). Checks turned off,
# each with its reason, are in staticcheck.conf.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(DEPS)/staticcheck-$(STATICCHECK_VERSION)/staticcheck

$(STATICCHECK):
	@echo "lint: installing staticcheck $(STATICCHECK_VERSION) into $(@D)"
	@GOBIN=$(abspath $(@D)) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## lint: gofmt, go vet and staticcheck (model/train also with GOEXPERIMENT=simd, its GEMM kernel)
lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOEXPERIMENT=simd $(GO) vet ./model/train
	$(STATICCHECK) ./...
	GOEXPERIMENT=simd $(STATICCHECK) ./model/train

## bench: every benchmark, ratios measured in one run
bench: setup $(BENCH_TARGETS)

# Every func Fuzz* in a _test.go file (found by git grep, so a new target is
# fuzzed without being listed here), in path order, then file order:
# export, model/safetensors, tokenizer, tools/calculator, tools, traj.
# FUZZ_PATHS narrows it to some folders (make fuzz FUZZ_PATHS=tokenizer).
FUZZTIME   ?= 30s
FUZZ_PATHS ?= .

## fuzz: every fuzz target in the tree, FUZZTIME each (default 30s; FUZZ_PATHS=dir ... for some)
fuzz:
	@git grep --untracked -o '^func Fuzz[A-Za-z0-9_]*' -- $(foreach p,$(FUZZ_PATHS),'$(p)/*_test.go') \
	| sed -E 's#^(.*)/[^/]*:func (Fuzz.*)$$#\1 \2#' \
	| while read -r dir name; do \
		echo "fuzz: ./$$dir $$name for $(FUZZTIME)"; \
		$(GO) test "./$$dir" -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

## clean: bin/ and out/
clean:
	rm -rf bin out

## run: a rollout of the default policy on the shipped calc prompts (64 prompts x G=8)
RUN_ARGS ?= --limit 64 --group-size 8 --seed 1
run: setup build
	@mkdir -p out
	bin/toolrl rollout --model models/calc --prompts data/calc/prompts.jsonl --out out/rollout.jsonl --resume=false $(RUN_ARGS)
