# The experiment (docs/experiment.md): plain GRPO vs tool-use RL vs a call
# bonus, through toolrl train, from the committed models/calc-overcall, with
# the faulty calculator of experiments/worlds/faulty-calc.yaml.
#
#   make experiment            arms grpo, toolrl and call-bonus, seeds 1 and 2 -> docs/experiment/main/
#   make experiment-ablations  toolrl with clean tools, with outcome-only credit, with
#                              DeepSeekMath's process credit, with OTC's
#                              multiplicative call cost, without keep_outcome_sign,
#                              for 80 iterations, seed 1 -> docs/experiment/ablations/
#   make experiment-easymix    grpo and toolrl on the two-thirds-easy subsets, seeds EXP_SEEDS
#                              -> docs/experiment/easymix/
#   make experiment-quantized  the first experiment's tool-use arm (calc-float32) with float32 rollouts, int8 rollouts (TIS on),
#                              int8 rollouts with TIS off, int4 rollouts with TIS on and off,
#                              seeds EXP_SEEDS -> docs/experiment/quantized/

EXP_OUT   ?= out/experiment
EXP_SEEDS ?= 1 2

.PHONY: experiment experiment-ablations experiment-quantized

## experiment: plain GRPO vs tool-use RL vs a call bonus, faulty tools, seeds EXP_SEEDS, into docs/experiment/main/
experiment: setup build
	scripts/experiment/run.sh $(EXP_OUT)/main docs/experiment/main "$(EXP_SEEDS)" grpo toolrl call-bonus

## experiment-ablations: the ablation arms, seed 1, into docs/experiment/ablations/
experiment-ablations: setup build
	scripts/experiment/run.sh $(EXP_OUT)/ablations docs/experiment/ablations "1" toolrl-clean toolrl-outcome toolrl-process toolrl-otc toolrl-unclipped toolrl-long

## experiment-quantized: the first experiment's tool-use arm (calc-float32) with float32 vs int8 and int4 rollouts (TIS on and off), seeds EXP_SEEDS, into docs/experiment/quantized/
experiment-quantized: setup build
	scripts/experiment/run.sh $(EXP_OUT)/quantized docs/experiment/quantized "$(EXP_SEEDS)" calc-float32 calc-int8 calc-int8-notis calc-int4 calc-int4-notis

# The easy-heavy mix (docs/experiment.md, "An easy-heavy mix"): every easy
# prompt of a set and the first half as many hard ones, in file order, so
# that two thirds are easy (SMART, arXiv 2502.11435: a tool-overuse rate
# above 66% for Llama-3.1-8B on math). Subsets of the shipped
# sets, so the held-out one stays disjoint from every training set.
EASYMIX_SETS := data/calc/rl-easymix.jsonl data/calc/prompts-easymix.jsonl

data/calc/%-easymix.jsonl: data/calc/%.jsonl
	jq -c -s '([.[] | select(.meta.difficulty == "easy")] | length / 2 | ceil) as $$n | ([.[] | select(.meta.difficulty == "hard") | .id][0:$$n]) as $$keep | .[] | select(.meta.difficulty == "easy" or (.id | IN($$keep[])))' $< > $@

.PHONY: experiment-easymix
## experiment-easymix: grpo and toolrl on the easy-heavy mix (2/3 easy), seeds EXP_SEEDS, into docs/experiment/easymix/
experiment-easymix: setup build $(EASYMIX_SETS)
	scripts/experiment/run.sh $(EXP_OUT)/easymix docs/experiment/easymix "$(EXP_SEEDS)" grpo-easymix toolrl-easymix
