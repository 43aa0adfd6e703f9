# The default calc policy (models/calc, data/calc): `make model` rebuilds the
# held-out prompts, the RL prompts, the tokenizer, the weights and the ONNX
# graph from scratch, deterministically. It is not part of `make test`.
# `make model-data` rewrites only the two prompt sets (seconds).
# The trainer is built with GOEXPERIMENT=simd so that its GEMM uses the
# AVX-512/AVX2 kernel (model/train/gemm_simd.go); without it the same code
# falls back to gonum's blas32 (slower, different float rounding). The
# shipped weights were trained with that kernel, so these targets keep it
# even where OpenBLAS is installed (TOOLRL_OPENBLAS=off): OpenBLAS rounds
# differently and would give other bytes (docs/calc.md).
CALC_DIR ?= models/calc
CALC_PROMPTS ?= data/calc/prompts.jsonl
CALC_RL_PROMPTS ?= data/calc/rl.jsonl
CALC_BIN := out/calc/toolrl-simd
CALC_EVAL_BIN := out/calc/toolrl

.PHONY: model model-data model-eval model-overcall

model model-overcall: export TOOLRL_OPENBLAS = off

# Everything is built into $(CALC_STAGE) first; the committed folder and
# prompt files are replaced only once all of it has been built, so a failed
# or interrupted run leaves them as they were.
CALC_STAGE := out/calc/stage

## model: rebuild data/calc and models/calc from scratch, deterministically (about 24 minutes; not in make test)
model:
	@mkdir -p out/calc
	GOEXPERIMENT=simd $(GO) build -o $(CALC_BIN) ./cmd/toolrl
	rm -rf $(CALC_STAGE) && mkdir -p $(CALC_STAGE)/data $(CALC_STAGE)/model
	$(CALC_BIN) model data --split test --out $(CALC_STAGE)/data/prompts.jsonl
	$(CALC_BIN) model data --split rl --out $(CALC_STAGE)/data/rl.jsonl
	$(CALC_BIN) model tokenizer --out $(CALC_STAGE)/model/tokenizer.json
	set -o pipefail; $(CALC_BIN) model train --out $(CALC_STAGE)/model $(CALC_TRAIN_FLAGS) 2>&1 | tee out/calc/train.log
	mkdir -p $(dir $(CALC_PROMPTS)) $(dir $(CALC_RL_PROMPTS)) $(dir $(CALC_DIR))
	mv -f $(CALC_STAGE)/data/prompts.jsonl $(CALC_PROMPTS)
	mv -f $(CALC_STAGE)/data/rl.jsonl $(CALC_RL_PROMPTS)
	rm -rf $(CALC_DIR).old && if [ -e $(CALC_DIR) ]; then mv $(CALC_DIR) $(CALC_DIR).old; fi
	mv $(CALC_STAGE)/model $(CALC_DIR) && rm -rf $(CALC_DIR).old
	@cd $(CALC_DIR) && sha256sum $$(find . -type f | sort) && sha256sum $(CURDIR)/$(CALC_PROMPTS) $(CURDIR)/$(CALC_RL_PROMPTS)

## model-data: rewrite only data/calc's two prompt sets, held-out and RL (no training)
model-data:
	@mkdir -p out/calc $(dir $(CALC_PROMPTS)) $(dir $(CALC_RL_PROMPTS))
	$(GO) build -o $(CALC_EVAL_BIN) ./cmd/toolrl
	$(CALC_EVAL_BIN) model data --split test --out $(CALC_PROMPTS)
	$(CALC_EVAL_BIN) model data --split rl --out $(CALC_RL_PROMPTS)
	@sha256sum $(CALC_PROMPTS) $(CALC_RL_PROMPTS)

# Measure the shipped policy on the held-out prompts, T=1.0, G=8, seed 1,
# through the orchestrator (trainer.Evaluate: the rollout's loop, tools and
# rewards), overall and by meta.difficulty.
## model-eval: the shipped policy on the held-out prompts (T=1, G=8, seed 1), overall and by difficulty
model-eval:
	@mkdir -p out/calc
	$(GO) build -o $(CALC_EVAL_BIN) ./cmd/toolrl
	$(CALC_EVAL_BIN) model eval --model $(CALC_DIR) --prompts $(CALC_PROMPTS) --samples 8 --temperature 1

# The second policy, models/calc-overcall (docs/calc.md, "A second policy"):
# models/calc's tokenizer and model shape, trained 8,000 steps on the
# overcall mix (recipe/calcdata.OvercallMix) by toolrl model train --mix
# overcall; staged like model.
CALC_OVERCALL_DIR := models/calc-overcall
CALC_OVERCALL_STAGE := out/calc-overcall/stage

## model-overcall: rebuild models/calc-overcall from scratch, deterministically (about 10 minutes; not in make test)
model-overcall:
	@mkdir -p out/calc-overcall
	GOEXPERIMENT=simd $(GO) build -o $(CALC_BIN) ./cmd/toolrl
	rm -rf $(CALC_OVERCALL_STAGE)
	set -o pipefail; $(CALC_BIN) model train --mix overcall --steps 8000 --tokenizer $(CALC_DIR)/tokenizer.json --out $(CALC_OVERCALL_STAGE) 2>&1 | tee out/calc-overcall/train.log
	rm -rf $(CALC_OVERCALL_DIR).old && if [ -e $(CALC_OVERCALL_DIR) ]; then mv $(CALC_OVERCALL_DIR) $(CALC_OVERCALL_DIR).old; fi
	mv $(CALC_OVERCALL_STAGE) $(CALC_OVERCALL_DIR) && rm -rf $(CALC_OVERCALL_DIR).old
	@cd $(CALC_OVERCALL_DIR) && sha256sum $$(find . -type f | sort)
