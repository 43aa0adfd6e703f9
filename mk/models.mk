# models/: Llama-family ONNX builder (models/llama, models/safetensors).
#
#   make models-npm      installs @huggingface/transformers into scripts/models (test dependency)
#   make interop-models  transformers.js loads a built tiny folder; greedy tokens == Go reference
#   make bench-models    builds the random SmolLM2-135M-shaped model into out/ (never committed)
#                        and benchmarks ORT against the Go reference on it

MODELS_NPM_STAMP := scripts/models/node_modules/.toolrl-installed
MODELS_BENCH_DIR := out/models/smollm2-135m-random

TEST_DEPS += models-npm
BENCH_TARGETS += bench-models

.PHONY: models-npm interop-models bench-models

## models-npm: npm install of transformers.js for the interop tests (idempotent)
models-npm: $(MODELS_NPM_STAMP)

$(MODELS_NPM_STAMP): scripts/models/package.json scripts/models/package-lock.json
	@echo "models: installing @huggingface/transformers into scripts/models"
	@ONNXRUNTIME_NODE_INSTALL=skip npm ci --prefix scripts/models --no-audit --no-fund --silent >/dev/null
	@touch $@

## interop-models: transformers.js loads a built tiny folder and decodes the Go reference's greedy tokens
interop-models: ort models-npm
	$(GO) test -count=1 -v -run 'TestTransformersJSInterop' ./models/llama

$(MODELS_BENCH_DIR)/onnx/model.onnx: | build
	bin/toolrl model build --random --shape smollm2-135m --seed 1 --out $(MODELS_BENCH_DIR)

## bench-models: ORT against the Go reference on the random SmolLM2-135M-shaped model (built into out/)
bench-models: ort $(MODELS_BENCH_DIR)/onnx/model.onnx
	TOOLRL_BENCH_MODEL=$(abspath $(MODELS_BENCH_DIR)) $(GO) test -run '^$$' -bench 'SmolLM2' -benchtime 3x ./models/llama
