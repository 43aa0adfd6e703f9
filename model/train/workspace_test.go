package train

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// mediumConfig is large enough that the per-row passes split into several
// chunks at GOMAXPROCS ≥ 2 (parallel.go's minChunk), small enough for -race.
func mediumConfig() Config {
	return Config{Vocab: 200, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, FF: 64, MaxPos: 64, RopeTheta: 10000, NormEps: 1e-5}
}

// mediumBatch is n random sequences of 20–60 tokens, about half trained.
func mediumBatch(seed uint64, n, vocab int) []Sequence {
	r := rand.New(rand.NewPCG(seed, 1))
	seqs := make([]Sequence, n)
	for i := range seqs {
		T := 20 + r.IntN(41)
		s := Sequence{Tokens: make([]int32, T), LossMask: make([]uint8, T)}
		for t := range T {
			s.Tokens[t] = int32(r.IntN(vocab))
			if t > T/3 && r.IntN(4) != 0 {
				s.LossMask[t] = 1
			}
		}
		seqs[i] = s
	}
	return seqs
}

// passValues runs a logprob pass and its backward (dlogp a fixed pattern)
// from zeroed gradients, then Step on the same batch, and returns every
// logprob, entropy, loss and gradient it produced.
func passValues(t *testing.T, m *Model, batch []Sequence) []float64 {
	t.Helper()
	temps := make([]float64, len(batch))
	for i := range temps {
		temps[i] = 0.6 + 0.1*float64(i%7)
	}
	m.ZeroGrad()
	lp, err := m.ForwardLogprobs(batch, temps)
	if err != nil {
		t.Fatal(err)
	}
	vals := append(append([]float64{}, lp.Logprobs...), lp.Entropy...)
	dlogp := make([]float64, lp.Rows())
	for i := range dlogp {
		dlogp[i] = math.Sin(float64(i)) / 10
	}
	if err := m.BackwardLogprobs(lp, dlogp); err != nil {
		t.Fatal(err)
	}
	vals = appendGrads(vals, m)
	m.ZeroGrad()
	loss, n, err := m.Step(batch)
	if err != nil {
		t.Fatal(err)
	}
	vals = append(vals, loss, float64(n))
	return appendGrads(vals, m)
}

func appendGrads(vals []float64, m *Model) []float64 {
	for _, p := range m.Params {
		for _, g := range p.G {
			vals = append(vals, float64(g))
		}
	}
	return vals
}

func sameBits(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%s: value %d is %v, want %v (bit-identical)", what, i, got[i], want[i])
		}
	}
}

// TestPassesBitIdenticalAcrossProcsAndReuse: a model that reuses its pass
// buffers across batches of different sizes, at GOMAXPROCS 2 and 3, gives
// bit-identical logprobs, entropies, losses and gradients to a fresh model
// per batch at GOMAXPROCS 1 (serial passes, freshly allocated buffers).
func TestPassesBitIdenticalAcrossProcsAndReuse(t *testing.T) {
	qwen3 := mediumConfig()
	qwen3.ModelType, qwen3.QKNorm, qwen3.HeadDim, qwen3.UntiedHead = "qwen3", true, 12, true
	qwen3.QKVBias, qwen3.OBias = true, true
	for name, c := range map[string]Config{"llama-gqa": mediumConfig(), "qwen3-qk-norm-bias": qwen3} {
		t.Run(name, func(t *testing.T) {
			batches := [][]Sequence{mediumBatch(1, 40, c.Vocab), mediumBatch(2, 9, c.Vocab), mediumBatch(3, 44, c.Vocab)}
			loadGEMM(t)
			prev := runtime.GOMAXPROCS(1)
			defer runtime.GOMAXPROCS(prev)
			want := make([][]float64, len(batches))
			for i, b := range batches {
				want[i] = passValues(t, tinyModelWith(t, c), b)
			}
			for _, procs := range []int{2, 3} {
				runtime.GOMAXPROCS(procs)
				m := tinyModelWith(t, c)
				for i, b := range batches {
					sameBits(t, name, passValues(t, m, b), want[i])
				}
				if m.spare == nil || m.spare.arena.size() == 0 {
					t.Errorf("GOMAXPROCS %d: the model kept no buffers for its next pass", procs)
				}
			}
		})
	}
}

// loadGEMM loads the GEMM (OpenBLAS when installed) at the default
// GOMAXPROCS, before a test lowers it. OpenBLAS's OpenMP build sets its
// thread count per calling OS thread: loaded at GOMAXPROCS 1 it would run
// one thread when called from the loading thread and the default elsewhere,
// and its roundings depend on how it splits a product among threads.
func loadGEMM(t *testing.T) { t.Logf("GEMM: %s", KernelName()) }

// TestOverlappingPasses: a second forward while a first pass awaits its
// backward does not touch the first's activations.
func TestOverlappingPasses(t *testing.T) {
	c := mediumConfig()
	loadGEMM(t)
	a, b := mediumBatch(4, 30, c.Vocab), mediumBatch(5, 12, c.Vocab)
	serial := tinyModelWith(t, c)
	lpA, err := serial.ForwardLogprobs(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantA := append([]float64{}, lpA.Logprobs...)
	ones := func(n int) []float64 {
		g := make([]float64, n)
		for i := range g {
			g[i] = 1
		}
		return g
	}
	if err := serial.BackwardLogprobs(lpA, ones(lpA.Rows())); err != nil {
		t.Fatal(err)
	}
	lpB, err := serial.ForwardLogprobs(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := serial.BackwardLogprobs(lpB, ones(lpB.Rows())); err != nil {
		t.Fatal(err)
	}
	want := appendGrads(nil, serial)

	m := tinyModelWith(t, c)
	lpA, err = m.ForwardLogprobs(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	lpB, err = m.ForwardLogprobs(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, "first pass's logprobs", lpA.Logprobs, wantA)
	if err := m.BackwardLogprobs(lpA, ones(lpA.Rows())); err != nil {
		t.Fatal(err)
	}
	if err := m.BackwardLogprobs(lpB, ones(lpB.Rows())); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "gradients", appendGrads(nil, m), want)
}

// TestReleaseReusesBuffers: once the model has sized its block (after the
// first pass) a pass of the same batch takes every buffer from it, and a
// released pass refuses a backward. (Bytes allocated are not the measure:
// the simd GEMM allocates its packing buffers per call.)
func TestReleaseReusesBuffers(t *testing.T) {
	c := mediumConfig()
	m := tinyModelWith(t, c)
	batch := mediumBatch(6, 40, c.Vocab)
	for i := range 3 {
		lp, err := m.ForwardLogprobs(batch, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.BackwardLogprobs(lp, make([]float64, lp.Rows())); err != nil {
			t.Fatal(err)
		}
		a := m.spare.arena
		t.Logf("pass %d: %d floats from the block, %d allocated beside it", i, a.used, a.over)
		if i > 0 && (a.over != 0 || a.used == 0) {
			t.Errorf("pass %d: %d floats from the block, %d allocated beside it; want all from the block", i, a.used, a.over)
		}
	}
	lp, err := m.ForwardLogprobs(batch[:10], nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.spare != nil {
		t.Errorf("a held pass's buffers are still the model's spare")
	}
	lp.Release()
	lp.Release() // a no-op
	if m.spare == nil {
		t.Errorf("Release gave no buffers back")
	}
	if err := m.BackwardLogprobs(lp, make([]float64, lp.Rows())); err == nil {
		t.Errorf("BackwardLogprobs after Release: no error")
	}
}
