package learner

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randomTokens spreads log-ratios over every branch of the loss: inside the
// clip range, beyond both bounds, beyond the dual clip, near the ±20 clamp.
func randomTokens(r *rand.Rand, n, seqs int, tis, ref bool) Tokens {
	tok := Tokens{NumSeqs: seqs}
	for i := range n {
		tok.Seq = append(tok.Seq, i*seqs/n)
		base := -0.1 - 3*r.Float64()
		d := []float64{0, 0.05, -0.05, 0.5, -0.5, 1.5, 2, -1.2, 19.5, -19.5}[r.IntN(10)] + 0.01*r.NormFloat64()
		tok.Base = append(tok.Base, base)
		tok.Logp = append(tok.Logp, base+d)
		tok.Advantage = append(tok.Advantage, []float64{1.3, -0.7, 0, -2}[r.IntN(4)])
		if tis {
			tok.TISWeight = append(tok.TISWeight, 0.5+r.Float64())
		}
		if ref {
			tok.RefLogp = append(tok.RefLogp, base+r.NormFloat64())
		}
	}
	return tok
}

// TestLossGradientCheck compares Compute's gradient with central
// differences of its loss, for every aggregation, with TIS and KL on.
func TestLossGradientCheck(t *testing.T) {
	for _, agg := range []Aggregation{TokenMean, SeqMeanTokenMean, SeqMeanTokenSumNorm} {
		for _, extras := range []bool{false, true} {
			c := DefaultLossConfig()
			c.Agg, c.NormLength = agg, 7
			if extras {
				c.TISCap, c.KLBeta = 2, 0.3
			}
			r := rand.New(rand.NewPCG(1, uint64(len(agg))))
			tok := randomTokens(r, 200, 9, extras, extras)
			w := c.Weights(tok.Seq, tok.NumSeqs)
			_, grad := c.Compute(tok, w)
			const h = 1e-6
			for i := range tok.Logp {
				x := tok.Logp[i]
				tok.Logp[i] = x + h
				up, _ := c.Compute(tok, w)
				tok.Logp[i] = x - h
				down, _ := c.Compute(tok, w)
				tok.Logp[i] = x
				num := (up.Loss - down.Loss) / (2 * h)
				if math.Abs(num-grad[i]) > 1e-6+1e-4*math.Abs(num) {
					t.Errorf("%s extras=%v token %d (d=%.3f A=%g): analytic %.9g, numeric %.9g", agg, extras, i, x-tok.Base[i], tok.Advantage[i], grad[i], num)
				}
			}
		}
	}
}

// TestLossOnPolicy: with logp = base the ratio is 1, nothing clips, and the
// token-mean loss is −mean(A) with gradient −A/n.
func TestLossOnPolicy(t *testing.T) {
	c := DefaultLossConfig()
	tok := Tokens{Seq: []int{0, 0, 1}, NumSeqs: 2, Logp: []float64{-1, -2, -0.5}, Base: []float64{-1, -2, -0.5}, Advantage: []float64{1, -2, 0.5}}
	st, grad := c.Compute(tok, c.Weights(tok.Seq, tok.NumSeqs))
	if st.ClipFracHigh+st.ClipFracLow+st.DualClipFrac != 0 || st.RatioMean != 1 || st.RatioMax != 1 {
		t.Fatalf("on-policy stats %+v", st)
	}
	if math.Abs(st.Loss-(-(1-2+0.5)/3)) > 1e-12 {
		t.Errorf("loss %g, want %g", st.Loss, -(1-2+0.5)/3)
	}
	for i, a := range tok.Advantage {
		if math.Abs(grad[i]+a/3) > 1e-12 {
			t.Errorf("grad[%d] = %g, want %g", i, grad[i], -a/3)
		}
	}
}

// TestLossClipsAndDualClip checks each branch's value and whether it passes
// a gradient.
func TestLossClipsAndDualClip(t *testing.T) {
	c := DefaultLossConfig()
	cases := []struct {
		name      string
		d, a      float64
		loss      float64
		gradZero  bool
		high, low bool
		dual      bool
	}{
		{"inside", 0.1, 1, -math.Exp(0.1), false, false, false, false},
		{"above high, A>0", math.Log(1.5), 1, -1.28, true, true, false, false},
		{"below low, A>0 (unclipped)", math.Log(0.5), 1, -0.5, false, false, false, false},
		{"below low, A<0", math.Log(0.5), -1, 0.8, true, false, true, false},
		{"above high, A<0 (unclipped)", math.Log(2), -1, 2, false, false, false, false},
		{"beyond dual clip", math.Log(5), -1, 3, true, false, false, true},
	}
	for _, k := range cases {
		tok := Tokens{Seq: []int{0}, NumSeqs: 1, Logp: []float64{-1 + k.d}, Base: []float64{-1}, Advantage: []float64{k.a}}
		st, grad := c.Compute(tok, []float64{1})
		if math.Abs(st.Loss-k.loss) > 1e-9 || (grad[0] == 0) != k.gradZero ||
			(st.ClipFracHigh == 1) != k.high || (st.ClipFracLow == 1) != k.low || (st.DualClipFrac == 1) != k.dual {
			t.Errorf("%s: loss %g (want %g), grad %g, stats %+v", k.name, st.Loss, k.loss, grad[0], st)
		}
	}
}

// TestLossWeights: each aggregation's weights sum to what its formula says.
func TestLossWeights(t *testing.T) {
	seq := []int{0, 0, 0, 2} // sequence 1 has no trained token
	sum := func(w []float64) float64 {
		s := 0.0
		for _, v := range w {
			s += v
		}
		return s
	}
	c := DefaultLossConfig()
	if w := c.Weights(seq, 3); math.Abs(sum(w)-1) > 1e-12 || w[0] != 0.25 {
		t.Errorf("token-mean %v", w)
	}
	c.Agg = SeqMeanTokenMean
	if w := c.Weights(seq, 3); math.Abs(w[0]-1.0/6) > 1e-12 || math.Abs(w[3]-0.5) > 1e-12 {
		t.Errorf("seq-mean-token-mean %v", w)
	}
	c.Agg, c.NormLength = SeqMeanTokenSumNorm, 10
	if w := c.Weights(seq, 3); math.Abs(w[0]-1.0/30) > 1e-12 {
		t.Errorf("seq-mean-token-sum-norm %v", w)
	}
}

func TestLossConfigValidate(t *testing.T) {
	bad := []func(*LossConfig){
		func(c *LossConfig) { c.ClipLow = 0 },
		func(c *LossConfig) { c.ClipLow = 1 },
		func(c *LossConfig) { c.ClipHigh = -1 },
		func(c *LossConfig) { c.DualClip = 1 },
		func(c *LossConfig) { c.TISCap = -2 },
		func(c *LossConfig) { c.KLBeta = math.NaN() },
		func(c *LossConfig) { c.Agg = "seq-sum" },
		func(c *LossConfig) { c.Agg, c.NormLength = SeqMeanTokenSumNorm, 0 },
	}
	for i, f := range bad {
		c := DefaultLossConfig()
		f(&c)
		if c.Validate() == nil {
			t.Errorf("case %d: %+v validated", i, c)
		}
	}
	if err := DefaultLossConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
