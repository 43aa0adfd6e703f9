package curves

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/toolrl/toolrl/trainer"
)

// TestClusterRobustByHand checks the CR1 interval against a hand
// computation: n = (2, 4, 4, 10), x = (1, 4, 0, 7): p = 12/20 = 0.6; the
// residuals x_j − p·n_j are −0.2, 1.6, −2.4, 1, their squares sum to 9.36;
// Var = 4/3 · 9.36 / 20² = 0.0312, se = 0.176635, p ± 1.96·se =
// [0.253801, 0.946199].
func TestClusterRobustByHand(t *testing.T) {
	p, lo, hi := ClusterRobust([]int{1, 4, 0, 7}, []int{2, 4, 4, 10})
	if math.Abs(p-0.6) > 1e-12 || math.Abs(lo-0.253801) > 1e-6 || math.Abs(hi-0.946199) > 1e-6 {
		t.Errorf("ClusterRobust = %g [%.6f, %.6f], want 0.6 [0.253801, 0.946199]", p, lo, hi)
	}
	// A count that is not a share (calls: 3 calls in 2 samples) is not
	// clipped at 1.
	if _, _, hi := ClusterRobust([]int{3, 0, 1}, []int{2, 2, 2}); hi <= 1 {
		t.Errorf("calls per sample: hi %g clipped at 1", hi)
	}
	// Without variation between prompts the sandwich is 0: Wilson over
	// the prompts. No samples: [0, 1].
	wlo, whi := Wilson(1, 3)
	if p, lo, hi := ClusterRobust([]int{4, 4, 4}, []int{4, 4, 4}); p != 1 || lo != wlo || hi != whi {
		t.Errorf("all right: %g [%g, %g], want 1 and Wilson over 3 prompts [%g, %g]", p, lo, hi, wlo, whi)
	}
	if p, lo, hi := ClusterRobust(nil, nil); p != 0 || lo != 0 || hi != 1 {
		t.Errorf("no samples: %g [%g, %g]", p, lo, hi)
	}
}

// TestClusterRobustDesignEffect: when the G samples of a prompt all give
// the same answer, a prompt is one observation, not G: the interval over
// prompts is √G times as wide as Wilson's over the samples (the design
// effect 1 + (G−1)ρ with ρ = 1), up to C/(C−1). When samples are
// independent the two agree: with one sample per prompt the CR1 variance is
// exactly p(1−p)/(N−1), and with G = 8 independent samples per prompt the
// widths agree within the noise of the variance estimate.
func TestClusterRobustDesignEffect(t *testing.T) {
	const prompts, g = 256, 8
	width := func(lo, hi float64) float64 { return hi - lo }

	x, n := make([]int, prompts), make([]int, prompts)
	for j := range x {
		n[j] = g
		if j%4 != 0 { // 3 in 4 prompts all right, the others all wrong
			x[j] = g
		}
	}
	p, lo, hi := ClusterRobust(x, n)
	wlo, whi := Wilson(p, prompts*g)
	ratio := width(lo, hi) / width(wlo, whi)
	if want := math.Sqrt(g * float64(prompts) / (prompts - 1)); math.Abs(ratio-want) > 0.02*want {
		t.Errorf("identical answers per prompt: width ratio CR1/Wilson %.3f, want ≈ √G·√(C/(C−1)) = %.3f", ratio, want)
	}

	one := make([]int, prompts*g)
	ones := make([]int, prompts*g)
	for j := range one {
		ones[j] = 1
		if j%4 != 0 {
			one[j] = 1
		}
	}
	p, lo, hi = ClusterRobust(one, ones)
	se := math.Sqrt(p * (1 - p) / float64(prompts*g-1))
	if math.Abs(lo-(p-z95*se)) > 1e-12 || math.Abs(hi-(p+z95*se)) > 1e-12 {
		t.Errorf("one sample per prompt: [%g, %g], want p ± z·√(p(1−p)/(N−1)) = [%g, %g]", lo, hi, p-z95*se, p+z95*se)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	const many = 2000
	x, n = make([]int, many), make([]int, many)
	for j := range x {
		n[j] = g
		for range g {
			if rng.Float64() < 0.75 {
				x[j]++
			}
		}
	}
	p, lo, hi = ClusterRobust(x, n)
	wlo, whi = Wilson(p, many*g)
	if ratio := width(lo, hi) / width(wlo, whi); math.Abs(ratio-1) > 0.06 {
		t.Errorf("independent samples: width ratio CR1/Wilson %.3f, want ≈ 1", ratio)
	}
}

// TestShareFallsBack: figures with counts per prompt get the interval over
// prompts; figures without (an old eval.jsonl line), or with counts that do
// not add up to the trajectories, get Wilson's over the samples.
func TestShareFallsBack(t *testing.T) {
	s := trainer.RolloutStats{Trajectories: 20, Accuracy: 0.6, CallRate: 0.5,
		PerPrompt: &trainer.PromptCounts{Samples: []int{2, 4, 4, 10}, Correct: []int{1, 4, 0, 7}, WithCall: []int{1, 2, 2, 5}, Calls: []int{1, 2, 2, 5}}}
	if a := Accuracy(s); a.Method != OverPrompts || math.Abs(a.Lo-0.253801) > 1e-6 {
		t.Errorf("Accuracy with counts = %+v, want the CR1 interval", a)
	}
	// Every prompt half with a call: no variation, Wilson over 4 prompts.
	wlo, whi := Wilson(0.5, 4)
	if c := CallRate(s); c != (Share{P: 0.5, Lo: wlo, Hi: whi, Method: OverPrompts}) {
		t.Errorf("CallRate = %+v, want 0.5 and Wilson over 4 prompts [%g, %g]", c, wlo, whi)
	}
	old := s
	old.PerPrompt = nil
	lo, hi := Wilson(0.6, 20)
	if a, want := Accuracy(old), (Share{P: 0.6, Lo: lo, Hi: hi, Method: OverSamples}); a != want {
		t.Errorf("Accuracy without counts = %+v, want Wilson over 20 samples [%g, %g]", a, lo, hi)
	}
	bad := s
	bad.Trajectories = 40
	if a := Accuracy(bad); a.Method != OverSamples {
		t.Errorf("counts for 20 samples of 40: %+v, want Wilson", a)
	}
}
