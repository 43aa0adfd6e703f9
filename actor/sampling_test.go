package actor

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestExpfAccuracy(t *testing.T) {
	worst := 0.0
	for x := -86.0; x <= 0; x += 0.00731 {
		got := float64(expf(float32(x)))
		want := math.Exp(float64(float32(x)))
		if rel := math.Abs(got-want) / want; rel > worst {
			worst = rel
		}
	}
	if worst > 3e-7 {
		t.Fatalf("expf worst relative error %g", worst)
	}
	if expf(-100) != 0 || expf(0) != 1 {
		t.Fatalf("expf(-100)=%v expf(0)=%v", expf(-100), expf(0))
	}
}

// logSoftmax64 is the float64 reference of the logprob convention.
func logSoftmax64(logits []float32, temp float64) []float64 {
	out := make([]float64, len(logits))
	m := math.Inf(-1)
	for _, v := range logits {
		m = math.Max(m, float64(v)/temp)
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v)/temp - m)
	}
	for i, v := range logits {
		out[i] = float64(v)/temp - m - math.Log(sum)
	}
	return out
}

func randomLogits(n int, seed uint64, scale float64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(scale * r.NormFloat64())
	}
	return out
}

func TestSampleLogprobConvention(t *testing.T) {
	var sm sampler
	logits := randomLogits(1000, 1, 3)
	for _, s := range []Sampling{{}, {Temperature: 0.7}, {Temperature: 1.3, TopK: 5}, {Temperature: 1, TopP: 0.5, MinP: 0.1}} {
		temp := s.Temperature
		if temp == 0 {
			temp = 1
		}
		want := logSoftmax64(logits, temp)
		for i := 0; i < 50; i++ {
			id, lp := sm.sample(logits, &s, (float64(i)+0.5)/50)
			if d := math.Abs(float64(lp) - want[id]); d > 1e-5 {
				t.Fatalf("%+v: token %d logprob %v, want %v", s, id, lp, want[id])
			}
		}
	}
	// Greedy is the argmax (lowest id on ties) whatever u is.
	logits[17], logits[400] = 100, 100
	for _, u := range []float64{0, 0.5, 0.999} {
		if id, _ := sm.sample(logits, &Sampling{}, u); id != 17 {
			t.Fatalf("greedy picked %d, want 17", id)
		}
	}
}

// frequencies samples with a fine grid of uniforms (exact quantiles) and
// returns the fraction of draws per token.
func frequencies(logits []float32, s Sampling, n int) map[int32]float64 {
	var sm sampler
	out := map[int32]float64{}
	for i := 0; i < n; i++ {
		id, _ := sm.sample(logits, &s, (float64(i)+0.5)/float64(n))
		out[id] += 1 / float64(n)
	}
	return out
}

func TestSampleDistribution(t *testing.T) {
	logits := randomLogits(200, 2, 2)
	const n = 20000
	probs := logSoftmax64(logits, 0.9)
	freq := frequencies(logits, Sampling{Temperature: 0.9}, n)
	for id, lp := range probs {
		if d := math.Abs(freq[int32(id)] - math.Exp(lp)); d > 2.0/n {
			t.Fatalf("token %d: frequency %v, probability %v", id, freq[int32(id)], math.Exp(lp))
		}
	}
}

// truncated returns the ids a Hugging Face-style warper chain keeps,
// computed by sorting (the slow obvious way).
func truncated(logits []float32, s Sampling) map[int32]float64 {
	probs := logSoftmax64(logits, s.Temperature)
	ids := make([]int, len(logits))
	for i := range ids {
		ids[i] = i
	}
	sort.SliceStable(ids, func(a, b int) bool { return probs[ids[a]] > probs[ids[b]] })
	if s.TopK > 0 && s.TopK < len(ids) {
		ids = ids[:s.TopK]
	}
	if s.TopP > 0 && s.TopP < 1 {
		var mass, acc float64
		for _, id := range ids {
			mass += math.Exp(probs[id])
		}
		for k, id := range ids {
			acc += math.Exp(probs[id])
			if acc >= s.TopP*mass {
				ids = ids[:k+1]
				break
			}
		}
	}
	if s.MinP > 0 {
		top := math.Exp(probs[ids[0]])
		var keep []int
		for _, id := range ids {
			if math.Exp(probs[id]) >= s.MinP*top {
				keep = append(keep, id)
			}
		}
		ids = keep
	}
	out := map[int32]float64{}
	var mass float64
	for _, id := range ids {
		mass += math.Exp(probs[id])
	}
	for _, id := range ids {
		out[int32(id)] = math.Exp(probs[id]) / mass
	}
	return out
}

func TestSampleTruncation(t *testing.T) {
	logits := randomLogits(500, 3, 2)
	const n = 20000
	for _, s := range []Sampling{
		{Temperature: 1, TopK: 10},
		{Temperature: 0.8, TopP: 0.6},
		{Temperature: 1.2, MinP: 0.2},
		{Temperature: 1, TopK: 50, TopP: 0.9, MinP: 0.05},
		{Temperature: 1, TopK: 1},
	} {
		want := truncated(logits, s)
		got := frequencies(logits, s, n)
		for id, f := range got {
			if _, ok := want[id]; !ok {
				t.Fatalf("%+v: sampled token %d outside the kept set", s, id)
			}
			if d := math.Abs(f - want[id]); d > 2.0/n+1e-9 {
				t.Fatalf("%+v: token %d frequency %v, want %v", s, id, f, want[id])
			}
		}
		for id, p := range want {
			if p > 4.0/n && got[id] == 0 {
				t.Fatalf("%+v: kept token %d (p=%v) never sampled", s, id, p)
			}
		}
	}
}

func TestSamplingValidate(t *testing.T) {
	for _, s := range []Sampling{{Temperature: -1}, {TopK: -1}, {TopP: 1.5}, {MinP: -0.1}, {MaxSampledTokens: -2}, {StopStrings: []string{""}}} {
		if s.Validate() == nil {
			t.Errorf("%+v: no error", s)
		}
	}
	if err := (Sampling{Temperature: 0.7, TopK: 20, TopP: 0.9, MinP: 0.05, MaxSampledTokens: 10}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestSampleSeed(t *testing.T) {
	seen := map[uint64]bool{}
	for job := uint64(0); job < 3; job++ {
		for _, p := range []string{"", "a", "b", "prompt-17"} {
			for i := 0; i < 8; i++ {
				s := SampleSeed(job, p, i)
				if seen[s] {
					t.Fatalf("seed collision at job %d prompt %q index %d", job, p, i)
				}
				seen[s] = true
				if SampleSeed(job, p, i) != s {
					t.Fatal("SampleSeed is not a function of its arguments")
				}
			}
		}
	}
	// Two RNGs with the same seed give the same stream; uniforms lie in [0,1).
	a, b := newTrajectoryRNG(5), newTrajectoryRNG(5)
	for i := 0; i < 1000; i++ {
		u, v := a.uniform(), b.uniform()
		if u != v || u < 0 || u >= 1 {
			t.Fatalf("draw %d: %v %v", i, u, v)
		}
	}
}

func BenchmarkSampleVocab49152(b *testing.B) {
	logits := randomLogits(49152, 4, 3)
	var sm sampler
	for _, c := range []struct {
		name string
		s    Sampling
	}{{"greedy", Sampling{}}, {"T1", Sampling{Temperature: 1}}, {"topk50_topp0.95", Sampling{Temperature: 1, TopK: 50, TopP: 0.95}}, {"topp0.95", Sampling{Temperature: 1, TopP: 0.95}}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				sm.sample(logits, &c.s, 0.5)
			}
		})
	}
}

// TestVectorKernels: the AVX2 exp-sum and max agree with the scalar code.
func TestVectorKernels(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2")
	}
	for _, n := range []int{8, 16, 320, 49152} {
		x := randomLogits(n, uint64(n), 20)
		x[n/3] = -200 // below expf's cut-off after the shift
		m := rowMax(x)
		var sm float32 = x[0]
		for _, v := range x {
			sm = max(sm, v)
		}
		if m != sm {
			t.Fatalf("n=%d: max %v, scalar %v", n, m, sm)
		}
		for _, invT := range []float32{1, 1.7} {
			w := make([]float32, n)
			sum := expSumAVX2(&w[0], &x[0], n, m, invT)
			var want float64
			for i, v := range x {
				e := expf((v - m) * invT)
				if w[i] != e {
					t.Fatalf("n=%d i=%d: vector %v, scalar %v (x=%v)", n, i, w[i], e, (v-m)*invT)
				}
				want += float64(e)
			}
			if math.Abs(sum-want) > 1e-9*want {
				t.Fatalf("n=%d: sum %v, scalar %v", n, sum, want)
			}
		}
	}
}
