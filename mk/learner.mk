# learner/: the policy learner (Learner.Update over advantage records).
#
#   make bench-learner   Learner.Update throughput (tokens/s, prompt + response
#                        through forward and backward) and the share of CPU time
#                        in GEMM, on calc-rollout-shaped batches for models/calc
#                        and the tiny random shape; built with GOEXPERIMENT=simd
#                        so the trainer's GEMM is the packed kernel
#                        (model/train/gemm_simd.go). Needs no ONNX Runtime.
#   make bench-learner-peer  the same update in PyTorch on the same weights and
#                        batch, interleaved with it, and an sgemm/STREAM probe
#                        (below; installs python3-torch with apt-get if missing).

BENCH_TARGETS += bench-learner

.PHONY: bench-learner

## bench-learner: Learner.Update tokens/s and the GEMM share of CPU (GOEXPERIMENT=simd)
bench-learner:
	GOEXPERIMENT=simd $(GO) test -run '^$$' -bench 'LearnerUpdate' -benchtime 10x ./learner

# make bench-learner-peer: the same update in PyTorch (scripts/bench/learner_peer.py,
# plain torch with python/examples/torch_grpo.py's model and loss) on the same
# weights and batch, interleaved with the Go benchmark: round r runs
# BenchmarkLearnerUpdate on calc and tiny (-peer-dir writes each shape's model
# folder, records.jsonl and go.json), then the torch peer on what it wrote.
# Then a probe of this machine's sgemm GFLOP/s and STREAM-triad GB/s, its FMA
# peak (model/train BenchmarkFMAPeak, best of 3, into fma.txt), and the
# table (tokens/s of each, ratio, GFLOP per update, GFLOP/s, share of the
# FMA peak and of the sgemm rate). Debian's python3-torch over OpenBLAS with OpenMP threads
# (libopenblas0-openmp selected as libblas.so.3 and liblapack.so.3), at 1 and 2
# threads, its best taken (the Go side: GOMAXPROCS 2, OpenBLAS at 2 threads).
PEER_APT    := libopenblas0-openmp
PEER_OUT    := out/bench-learner-peer
PEER_ROUNDS := 3
PEER_UPDATES := 10
# OpenBLAS picks its kernels from the CPU unless OPENBLAS_CORETYPE names
# them, and Debian's 0.3.21 falls back to its slowest (Prescott, SSE3) on
# CPUs it does not know (a Sapphire Rapids Xeon under a hypervisor here). The
# peer gets the kernels this CPU supports as the Go side's OpenBLAS does
# (internal/openblas CoreType, printed by `toolrl version`), unless
# PEER_OPENBLAS_CORETYPE names others (empty: OpenBLAS's own choice).
PEER_OPENBLAS_CORETYPE ?= $(shell bin/toolrl version 2>/dev/null | awk '$$1 == "openblas_coretype" { print $$2 }')
PEER_ENV = $(if $(PEER_OPENBLAS_CORETYPE),env OPENBLAS_CORETYPE=$(PEER_OPENBLAS_CORETYPE),env -u OPENBLAS_CORETYPE)

.PHONY: bench-learner-peer bench-learner-peer-deps

bench-learner-peer-deps: python-deps
	$(call apt_ensure,$(PEER_APT),bench-learner-peer)
	@for lib in libblas.so.3 liblapack.so.3; do \
		path=$$(ls /usr/lib/*/openblas-openmp/$$lib | head -1); \
		triplet=$$(basename $$(dirname $$(dirname $$path))); \
		update-alternatives --set $$lib-$$triplet $$path >/dev/null; \
	done

## bench-learner-peer: Learner.Update against its PyTorch peer (OpenBLAS-openmp), interleaved, with an sgemm/STREAM probe
bench-learner-peer: bench-learner-peer-deps build
	rm -rf $(PEER_OUT) && mkdir -p $(PEER_OUT)
	GOEXPERIMENT=simd $(GO) test -c -o $(PEER_OUT)/learner.test ./learner
	set -o pipefail; for r in $$(seq 1 $(PEER_ROUNDS)); do \
		(cd learner && $(CURDIR)/$(PEER_OUT)/learner.test -test.run '^$$' -test.bench 'LearnerUpdate/^(calc|tiny)$$' \
			-test.benchtime $(PEER_UPDATES)x -peer-dir $(CURDIR)/$(PEER_OUT)/round-$$r) | grep -E '^Benchmark' || exit 1; \
		$(PEER_ENV) $(PYTHON) scripts/bench/learner_peer.py run --updates $(PEER_UPDATES) $(PEER_OUT)/round-$$r || exit 1; \
	done
	$(PEER_ENV) $(PYTHON) scripts/bench/learner_peer.py probe $(PEER_OUT)/peak.json
	GOEXPERIMENT=simd $(GO) test -c -o $(PEER_OUT)/train.test ./model/train
	for r in 1 2 3; do $(PEER_OUT)/train.test -test.run '^$$' -test.bench '^BenchmarkFMAPeak$$' -test.benchtime 100x; done \
		| awk '/^BenchmarkFMAPeak/ { for (i = 1; i < NF; i++) if ($$(i + 1) == "GFLOP/s") print $$i }' > $(PEER_OUT)/fma.txt
	$(PYTHON) scripts/bench/learner_peer.py report $(PEER_OUT)

# OpenBLAS for the trainer's GEMM: internal/openblas loads Debian's
# libopenblas0-openmp at run time (TOOLRL_OPENBLAS names another file, or
# "off"); without it model/train keeps its pure-Go kernel.
OPENBLAS_APT := libopenblas0-openmp

.PHONY: openblas
setup: openblas
openblas:
	$(call apt_ensure,$(OPENBLAS_APT),setup)
