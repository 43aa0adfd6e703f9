package train

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// copyData is a toy task: after a BOS (12) comes a random prefix and a
// separator (11); the model must repeat the prefix (loss on the repeat only).
func copyData(n int) []Sequence {
	r := rand.New(rand.NewPCG(5, 5))
	var out []Sequence
	for range n {
		k := 2 + r.IntN(4)
		s := Sequence{Tokens: []int32{12}, LossMask: []uint8{0}}
		var pre []int32
		for range k {
			pre = append(pre, int32(r.IntN(10)))
		}
		s.Tokens = append(s.Tokens, pre...)
		s.Tokens = append(s.Tokens, 11)
		for range k + 1 {
			s.LossMask = append(s.LossMask, 0)
		}
		s.Tokens = append(s.Tokens, pre...)
		for range k {
			s.LossMask = append(s.LossMask, 1)
		}
		out = append(out, s)
	}
	return out
}

func trainTiny(t *testing.T, procs, steps int) (*Model, Result) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	cfg := Config{Vocab: 13, Dim: 32, Layers: 2, Heads: 2, KVHeads: 2, FF: 64, MaxPos: 16, RopeTheta: 10000, NormEps: 1e-5}
	m, err := NewModel(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), m, copyData(512), Options{
		Steps: steps, BatchSize: 16, LR: 1e-2, Seed: 4, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, res
}

// TestRunDeterministic: same seeds give bit-identical weights whatever the
// number of threads.
func TestRunDeterministic(t *testing.T) {
	a, _ := trainTiny(t, 1, 20)
	b, _ := trainTiny(t, 2, 20)
	for i, p := range a.Params {
		if !slices.Equal(p.W, b.Params[i].W) {
			t.Fatalf("%s differs between runs", p.Name)
		}
	}
}

// TestRunLearns: the loss on the toy copy task falls well below chance (ln 10).
func TestRunLearns(t *testing.T) {
	_, res := trainTiny(t, 2, 300)
	if res.LastLoss > 1.0 {
		t.Fatalf("loss after 300 steps %.3f, want < 1.0 (chance is 2.30)", res.LastLoss)
	}
	t.Logf("loss after 300 steps: %.3f", res.LastLoss)
}

func TestCosine(t *testing.T) {
	c := Cosine{Peak: 1, MinRatio: 0.1, Warmup: 10, Total: 110}
	if c.At(5) != 0.5 || c.At(10) != 1 || abs(c.At(60)-0.55) > 1e-9 || abs(c.At(110)-0.1) > 1e-9 || abs(c.At(500)-0.1) > 1e-9 {
		t.Fatalf("schedule: %v %v %v %v", c.At(5), c.At(10), c.At(60), c.At(110))
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
