# The default calc policy (models/calc, data/calc): `make model` rebuilds the
# held-out prompts, the RL prompts, the tokenizer, the weights and the ONNX
# graph from scratch, deterministically. It is not part of `make test`.
# `make model-data` rewrites only the two prompt sets (seconds).
# The trainer is built with GOEXPERIMENT=simd so that its GEMM uses the
# AVX-512/AVX2 kernel (models/train/gemm_simd.go); without it the same code
# falls back to gonum's blas32 (slower, different float rounding).
CALC_DIR ?= models/calc
CALC_PROMPTS ?= data/calc/prompts.jsonl
CALC_RL_PROMPTS ?= data/calc/rl.jsonl
CALC_BIN := out/calc/toolrl-simd
CALC_EVAL_BIN := out/calc/toolrl

.PHONY: model model-data model-eval

model:
	@mkdir -p out/calc $(dir $(CALC_PROMPTS)) $(dir $(CALC_RL_PROMPTS))
	GOEXPERIMENT=simd $(GO) build -o $(CALC_BIN) ./cmd/toolrl
	rm -rf $(CALC_DIR) && mkdir -p $(CALC_DIR)
	$(CALC_BIN) model data --split test --out $(CALC_PROMPTS)
	$(CALC_BIN) model data --split rl --out $(CALC_RL_PROMPTS)
	$(CALC_BIN) model tokenizer --out $(CALC_DIR)/tokenizer.json
	set -o pipefail; $(CALC_BIN) model train --out $(CALC_DIR) $(CALC_TRAIN_FLAGS) 2>&1 | tee out/calc/train.log
	@cd $(CALC_DIR) && sha256sum $$(find . -type f | sort) && sha256sum $(CURDIR)/$(CALC_PROMPTS) $(CURDIR)/$(CALC_RL_PROMPTS)

# The two prompt sets only (no training): the held-out test set and the RL set.
model-data:
	@mkdir -p out/calc $(dir $(CALC_PROMPTS)) $(dir $(CALC_RL_PROMPTS))
	$(GO) build -o $(CALC_EVAL_BIN) ./cmd/toolrl
	$(CALC_EVAL_BIN) model data --split test --out $(CALC_PROMPTS)
	$(CALC_EVAL_BIN) model data --split rl --out $(CALC_RL_PROMPTS)
	@sha256sum $(CALC_PROMPTS) $(CALC_RL_PROMPTS)

# Measure the shipped policy on the held-out prompts, T=1.0, G=8, seed 1,
# through the orchestrator (trainer.Evaluate: the rollout's loop, tools and
# rewards), overall and by meta.difficulty.
model-eval:
	@mkdir -p out/calc
	$(GO) build -o $(CALC_EVAL_BIN) ./cmd/toolrl
	$(CALC_EVAL_BIN) model eval --model $(CALC_DIR) --prompts $(CALC_PROMPTS) --samples 8 --temperature 1
