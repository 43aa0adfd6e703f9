# actor/: ONNX policy runtime (KV cache, continuous batching, sampling, logprobs).
#
#   make bench-actor  in one run, on the tiny and the SmolLM2-135M-shaped random models
#                     (and models/calc when it has been built): generated tokens/s at
#                     concurrency 1, 4, 8, 16, 64; Go-side overhead (wall time outside ORT
#                     Run); toolrl / transformers.js generate() at G=8; RSS over 10,000
#                     trajectories; the 135M model also as int8 and int4 (MatMulNBits, blocks
#                     of 32; int4 also in blocks of 128), each against the float32 model.
#                     Writes out/bench-actor.md and out/bench-actor.json.
#                     The random models are built into out/ (never committed).

ACTOR_TINY_DIR   := out/models/tiny-random
ACTOR_135M_DIR   := out/models/smollm2-135m-random
# The same weights quantized for actors (#19): MatMulNBits int8 and int4,
# accuracy level 4, LM head included (docs/models.md#quantized-export-19).
ACTOR_135M_INT8_DIR := out/models/smollm2-135m-random-int8
ACTOR_135M_INT4_DIR := out/models/smollm2-135m-random-int4
ACTOR_135M_INT4_B128_DIR := out/models/smollm2-135m-random-int4-b128
ACTOR_QUANT_ARGS    := --accuracy-level 4 --quantize-lm-head
ACTOR_CALC_DIR   := models/calc
ACTOR_BENCH_ARGS ?= --concurrency 1,4,8,16,64 --prompt-len 64 --new-tokens 64 --tools-every 8 --peer --peer-repeats 3 --rss 10000

BENCH_TARGETS += bench-actor

.PHONY: bench-actor

## bench-actor: actor throughput, overhead, peer ratio and RSS, one run
# The transformers.js peer (scripts/actor) comes from the scripts/ workspace.
bench-actor: ort scripts-npm build
	@mkdir -p out
	@test -f $(ACTOR_TINY_DIR)/onnx/model.onnx || bin/toolrl model build --random --shape tiny --seed 1 --out $(ACTOR_TINY_DIR) >/dev/null
	@test -f $(ACTOR_135M_DIR)/onnx/model.onnx || bin/toolrl model build --random --shape smollm2-135m --seed 1 --out $(ACTOR_135M_DIR) >/dev/null
	@test -f $(ACTOR_135M_INT8_DIR)/onnx/model.onnx || bin/toolrl model build --random --shape smollm2-135m --seed 1 --quantize int8 $(ACTOR_QUANT_ARGS) --out $(ACTOR_135M_INT8_DIR) >/dev/null
	@test -f $(ACTOR_135M_INT4_DIR)/onnx/model.onnx || bin/toolrl model build --random --shape smollm2-135m --seed 1 --quantize int4 $(ACTOR_QUANT_ARGS) --out $(ACTOR_135M_INT4_DIR) >/dev/null
	@test -f $(ACTOR_135M_INT4_B128_DIR)/onnx/model.onnx || bin/toolrl model build --random --shape smollm2-135m --seed 1 --quantize int4 --block-size 128 $(ACTOR_QUANT_ARGS) --out $(ACTOR_135M_INT4_B128_DIR) >/dev/null
	@set -o pipefail; bin/toolrl bench actor --model $(ACTOR_TINY_DIR) --model $(ACTOR_135M_DIR) \
		--model $(ACTOR_135M_INT8_DIR) --model $(ACTOR_135M_INT4_DIR) --model $(ACTOR_135M_INT4_B128_DIR) \
		$(if $(wildcard $(ACTOR_CALC_DIR)/onnx/model.onnx),--model $(ACTOR_CALC_DIR)) \
		$(ACTOR_BENCH_ARGS) --json out/bench-actor.json | tee out/bench-actor.md

# The fused graph (#31, `model build --fused`: GroupQueryAttention over a
# preallocated KV buffer, SkipSimplifiedLayerNormalization): the 135M model
# and its int4 copies, each beside the optimum file of the same weights, and
# transformers.js at G = 8 on the optimum file (the peer cannot run the fused
# graph), interleaved, BENCH_FUSED_REPEATS runs of each. Writes
# out/bench-fused.txt (one line per run).
BENCH_FUSED_REPEATS ?= 3
# --spin: two threads spinning measured fastest on the quiet machine (BENCHMARKS.md).
BENCH_FUSED_ARGS ?= --concurrency 1,8 --prompt-len 64 --new-tokens 64 --spin
BENCH_FUSED_MODELS := $(ACTOR_135M_DIR) $(ACTOR_135M_DIR)-fused $(ACTOR_135M_INT4_DIR) $(ACTOR_135M_INT4_DIR)-fused \
	$(ACTOR_135M_INT4_B128_DIR) $(ACTOR_135M_INT4_B128_DIR)-fused

BENCH_TARGETS += bench-fused

.PHONY: bench-fused

## bench-fused: fused graph vs optimum layout on the 135M model (float32, int4), and transformers.js on the optimum file
bench-fused: ort scripts-npm build
	@mkdir -p out/models
	@test -f $(ACTOR_135M_DIR)/onnx/model.onnx || bin/toolrl model build --random --shape smollm2-135m --seed 1 --out $(ACTOR_135M_DIR) >/dev/null
	@test -f $(ACTOR_135M_DIR)-fused/onnx/model.onnx || bin/toolrl model build --random --shape smollm2-135m --seed 1 --fused --out $(ACTOR_135M_DIR)-fused >/dev/null
	@for f in "" --fused; do \
		test -f $(ACTOR_135M_INT4_DIR)$${f:+-fused}/onnx/model.onnx || bin/toolrl model build --random --shape smollm2-135m --seed 1 --quantize int4 $(ACTOR_QUANT_ARGS) $$f --out $(ACTOR_135M_INT4_DIR)$${f:+-fused} >/dev/null || exit 1; \
		test -f $(ACTOR_135M_INT4_B128_DIR)$${f:+-fused}/onnx/model.onnx || bin/toolrl model build --random --shape smollm2-135m --seed 1 --quantize int4 --block-size 128 $(ACTOR_QUANT_ARGS) $$f --out $(ACTOR_135M_INT4_B128_DIR)$${f:+-fused} >/dev/null || exit 1; \
	done
	@set -o pipefail; for rep in $$(seq $(BENCH_FUSED_REPEATS)); do \
		for m in $(BENCH_FUSED_MODELS); do bin/toolrl bench actor --model $$m $(BENCH_FUSED_ARGS) 2>&1 | grep '^bench actor:' || exit 1; done; \
		echo "peer $(ACTOR_135M_DIR) G=8: $$(node scripts/actor/peer.mjs $(ACTOR_135M_DIR) 8 64 64 0)" || exit 1; \
	done | tee out/bench-fused.txt

# The model families of #25 on 135M-class random shapes (SmolLM2-135M's
# sizes with each family's features: qwen2 q/k/v biases, qwen3 q/k norms and
# explicit head_dim, llama3 rope scaling), each against transformers.js on
# the same file, in one run. Writes out/bench-families.md and .json.
FAMILY_SHAPES := smollm2-135m qwen2.5-135m qwen3-135m llama3.2-135m
FAMILY_BENCH_ARGS ?= --concurrency 8 --prompt-len 64 --new-tokens 64 --tools-every 8 --peer --peer-repeats 3

BENCH_TARGETS += bench-families

.PHONY: bench-families

## bench-families: per-family actor throughput vs transformers.js (135M-class shapes, G = 8), one run
bench-families: ort scripts-npm build
	@mkdir -p out/models
	@for s in $(FAMILY_SHAPES); do test -f out/models/$$s-random/onnx/model.onnx || bin/toolrl model build --random --shape $$s --seed 1 --out out/models/$$s-random >/dev/null || exit 1; done
	@set -o pipefail; bin/toolrl bench actor $(foreach s,$(FAMILY_SHAPES),--model out/models/$(s)-random) \
		$(FAMILY_BENCH_ARGS) --json out/bench-families.json | tee out/bench-families.md
