# The experiment (docs/experiment.md): plain GRPO vs tool-use RL on the
# default policy, through toolrl train, from the committed models/calc.
#
#   make experiment            arms grpo and toolrl, seeds 1 and 2 -> docs/experiment/main/
#   make experiment-ablations  staged rewards with outcome advantages, the Dr.GRPO
#                              estimator, and a call
#                              bonus with no cost and no cap -> docs/experiment/ablations/
#   make experiment-quantized  the tool-use arm with float32 rollouts, int8 rollouts (TIS on),
#                              int8 rollouts with TIS off, int4 rollouts with TIS on and off,
#                              seeds EXP_SEEDS -> docs/experiment/quantized/

EXP_OUT   ?= out/experiment
EXP_SEEDS ?= 1 2

.PHONY: experiment experiment-ablations experiment-quantized

## experiment: plain GRPO vs tool-use RL, seeds EXP_SEEDS, into docs/experiment/main/
experiment: setup build
	scripts/experiment/run.sh $(EXP_OUT)/main docs/experiment/main "$(EXP_SEEDS)" grpo toolrl

## experiment-ablations: the ablation arms, seed 1, into docs/experiment/ablations/
experiment-ablations: setup build
	scripts/experiment/run.sh $(EXP_OUT)/ablations docs/experiment/ablations "1" toolrl-outcome toolrl-drgrpo toolrl-outcome-drgrpo call-bonus

## experiment-quantized: the tool-use arm with float32 vs int8 and int4 rollouts (TIS on and off), seeds EXP_SEEDS, into docs/experiment/quantized/
experiment-quantized: setup build
	scripts/experiment/run.sh $(EXP_OUT)/quantized docs/experiment/quantized "$(EXP_SEEDS)" toolrl calc-int8 calc-int8-notis calc-int4 calc-int4-notis
