# models/: Llama-family ONNX builder (model/llama, model/safetensors).
#
#   make interop-models  transformers.js loads a built tiny folder; greedy tokens == Go reference
#   make bench-models    builds the random SmolLM2-135M-shaped model into out/ (never committed)
#                        and benchmarks ORT against the Go reference on it

MODELS_BENCH_DIR := out/models/smollm2-135m-random

BENCH_TARGETS += bench-models

.PHONY: interop-models bench-models

## interop-models: transformers.js loads a built tiny folder and decodes the Go reference's greedy tokens
interop-models: ort scripts-npm
	$(GO) test -count=1 -v -run 'TestTransformersJSInterop' ./model/llama

$(MODELS_BENCH_DIR)/onnx/model.onnx: | build
	bin/toolrl model build --random --shape smollm2-135m --seed 1 --out $(MODELS_BENCH_DIR)

## bench-models: ORT against the Go reference on the random SmolLM2-135M-shaped model (built into out/)
bench-models: ort $(MODELS_BENCH_DIR)/onnx/model.onnx
	TOOLRL_BENCH_MODEL=$(abspath $(MODELS_BENCH_DIR)) $(GO) test -run '^$$' -bench 'SmolLM2' -benchtime 3x ./model/llama
