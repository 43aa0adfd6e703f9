# learner/: the policy learner (Learner.Update over advantage records).
#
#   make bench-learner   Learner.Update throughput (tokens/s, prompt + response
#                        through forward and backward) and the share of CPU time
#                        in GEMM, on calc-rollout-shaped batches for models/calc
#                        and the tiny random shape; built with GOEXPERIMENT=simd
#                        so the trainer's GEMM is the packed kernel
#                        (model/train/gemm_simd.go). Needs no ONNX Runtime.

BENCH_TARGETS += bench-learner

.PHONY: bench-learner

## bench-learner: Learner.Update tokens/s and the GEMM share of CPU (GOEXPERIMENT=simd)
bench-learner:
	GOEXPERIMENT=simd $(GO) test -run '^$$' -bench 'LearnerUpdate' -benchtime 10x ./learner
