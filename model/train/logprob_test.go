package train

import (
	"math"
	"testing"
)

// TestLogprobsMatchLogits checks ForwardLogprobs against log-softmax of the
// plain forward's logits at each sequence's temperature, and the entropy
// against its definition.
func TestLogprobsMatchLogits(t *testing.T) {
	m := tinyModel(t)
	batch := tinyBatch()
	temps := []float64{0.7, 1.3, 1}
	lp, err := m.ForwardLogprobs(batch, temps)
	if err != nil {
		t.Fatal(err)
	}
	if lp.Rows() != 5 {
		t.Fatalf("rows %d, want 5", lp.Rows())
	}
	V := m.Config.Vocab
	for i := range lp.Rows() {
		s, pos := lp.Seq[i], lp.Pos[i]
		logits, err := m.Logits(batch[s].Tokens)
		if err != nil {
			t.Fatal(err)
		}
		row := logits[(pos-1)*V : pos*V]
		invT := 1 / float64(float32(temps[s]))
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, float64(v)*invT)
		}
		var sum float64
		for _, v := range row {
			sum += math.Exp(float64(v)*invT - mx)
		}
		lse := mx + math.Log(sum)
		want := float64(row[batch[s].Tokens[pos]])*invT - lse
		var ent float64
		for _, v := range row {
			q := float64(v)*invT - lse
			ent -= math.Exp(q) * q
		}
		if math.Abs(lp.Logprobs[i]-want) > 1e-5 || math.Abs(lp.Entropy[i]-ent) > 1e-5 {
			t.Errorf("row %d (seq %d pos %d): logprob %.7f want %.7f, entropy %.7f want %.7f", i, s, pos, lp.Logprobs[i], want, lp.Entropy[i], ent)
		}
	}
}

// TestLogprobGradientCheck compares the analytic gradient of a weighted sum
// of logprobs at two temperatures with central differences.
func TestLogprobGradientCheck(t *testing.T) {
	t.Run("tied", func(t *testing.T) { logprobGradientCheck(t, tinyModel(t)) })
	untied := tinyConfig()
	untied.UntiedHead = true
	t.Run("untied", func(t *testing.T) { logprobGradientCheck(t, tinyModelWith(t, untied)) })
}

func logprobGradientCheck(t *testing.T, m *Model) {
	objective, lp := logprobObjective(t, m)
	if err := m.BackwardLogprobs(lp, logprobWeights); err == nil {
		t.Fatal("second BackwardLogprobs on one pass: no error")
	}
	checkGradient(t, m, objective, 5e-4)
}

// The temperatures and per-token weights of the logprob gradient checks.
var (
	logprobTemps   = []float64{0.7, 1.3, 1}
	logprobWeights = []float64{0.9, -1.7, 0.4, 1.1, -0.6}
)

// logprobObjective leaves m's gradients those of Σ weights·logprobs of
// tinyBatch at logprobTemps (BackwardLogprobs after a zeroed forward) and
// returns that sum as a function of m's current weights, for a gradient
// check, and the pass BackwardLogprobs consumed.
func logprobObjective[F Float](t *testing.T, m *ModelOf[F]) (func() float64, *LogprobPass) {
	t.Helper()
	batch := tinyBatch()
	objective := func() float64 {
		lp, err := m.ForwardLogprobs(batch, logprobTemps)
		if err != nil {
			t.Fatal(err)
		}
		var s float64
		for i, l := range lp.Logprobs {
			s += logprobWeights[i] * l
		}
		return s
	}
	m.ZeroGrad()
	lp, err := m.ForwardLogprobs(batch, logprobTemps)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.BackwardLogprobs(lp, logprobWeights); err != nil {
		t.Fatal(err)
	}
	return objective, lp
}

// TestLogprobBackwardMatchesStep: the SFT loss is −mean logprob at T = 1, so
// BackwardLogprobs with dlogp = −1/n gives Step's gradient.
func TestLogprobBackwardMatchesStep(t *testing.T) {
	m := tinyModel(t)
	batch := tinyBatch()
	m.ZeroGrad()
	if _, _, err := m.Step(batch); err != nil {
		t.Fatal(err)
	}
	want := map[string][]float32{}
	for _, p := range m.Params {
		want[p.Name] = append([]float32(nil), p.G...)
	}
	m.ZeroGrad()
	lp, err := m.ForwardLogprobs(batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := make([]float64, lp.Rows())
	for i := range d {
		d[i] = float64(-1 / float32(len(d)))
	}
	if err := m.BackwardLogprobs(lp, d); err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params {
		for i, g := range p.G {
			if math.Abs(float64(g-want[p.Name][i])) > 1e-5+1e-4*math.Abs(float64(g)) {
				t.Fatalf("%s[%d]: %g, Step gave %g", p.Name, i, g, want[p.Name][i])
			}
		}
	}
}

func TestForwardLogprobsRefusesBadTemperature(t *testing.T) {
	m := tinyModel(t)
	for _, temps := range [][]float64{{0, 1, 1}, {1, math.NaN(), 1}, {1, 1}} {
		if _, err := m.ForwardLogprobs(tinyBatch(), temps); err == nil {
			t.Errorf("temperatures %v: no error", temps)
		}
	}
}
