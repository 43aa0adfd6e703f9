package train

import (
	"math"
	"math/rand/v2"
	"testing"
)

func tinyConfig() Config {
	return Config{Vocab: 13, Dim: 8, Layers: 2, Heads: 2, KVHeads: 1, FF: 12, MaxPos: 16, RopeTheta: 10000, NormEps: 1e-5}
}

// tinyModel has weights large enough that every nonlinearity matters.
func tinyModel(t *testing.T) *Model { return tinyModelWith(t, tinyConfig()) }

func tinyModelWith(t *testing.T, c Config) *Model {
	t.Helper()
	m, err := NewModel(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	for _, p := range m.Params {
		for i := range p.W {
			if len(p.Shape) == 1 {
				p.W[i] = float32(0.5 + r.Float64())
			} else {
				p.W[i] = float32(r.NormFloat64() * 0.4)
			}
		}
	}
	return m
}

func tinyBatch() []Sequence {
	return []Sequence{
		{Tokens: []int32{12, 3, 5, 7, 1, 2, 9}, LossMask: []uint8{0, 0, 0, 1, 0, 1, 1}},
		{Tokens: []int32{12, 4, 4, 11}, LossMask: []uint8{0, 0, 1, 1}},
		{Tokens: []int32{12, 6}, LossMask: []uint8{0, 0}},
	}
}

// TestGradientCheck compares the analytic gradient of every weight with a
// central finite difference of the mean loss.
func TestGradientCheck(t *testing.T) {
	m := tinyModel(t)
	batch := tinyBatch()
	m.ZeroGrad()
	if _, n, err := m.Step(batch); err != nil || n != 5 {
		t.Fatalf("Step: count %d, err %v", n, err)
	}
	mean := func() float64 {
		l, n, err := m.Loss(batch)
		if err != nil {
			t.Fatal(err)
		}
		return l / float64(n)
	}
	checkGradient(t, m, mean, 2e-4)
}

// checkGradient compares every Param.G of m with a central finite
// difference of objective, within absTol + 2% of the numeric value.
func checkGradient(t *testing.T, m *Model, objective func() float64, absTol float64) {
	t.Helper()
	const eps = 3e-3
	worst := 0.0
	for _, p := range m.Params {
		for i := range p.W {
			w := p.W[i]
			p.W[i] = w + eps
			up := objective()
			p.W[i] = w - eps
			down := objective()
			p.W[i] = w
			num := (up - down) / (2 * eps)
			ana := float64(p.G[i])
			diff := math.Abs(num - ana)
			if diff > absTol+2e-2*math.Abs(num) {
				t.Errorf("%s[%d]: analytic %.6f, numeric %.6f", p.Name, i, ana, num)
			}
			worst = max(worst, diff/(1e-3+math.Abs(num)))
		}
	}
	t.Logf("largest |analytic - numeric|/(1e-3+|numeric|) = %.2g", worst)
}

// TestMaskedTokensCarryNoGradient checks that tokens with mask 0 (tool
// results) do not change the loss: changing a masked target changes nothing.
func TestMaskedTokensCarryNoGradient(t *testing.T) {
	m := tinyModel(t)
	a := []Sequence{{Tokens: []int32{12, 3, 5, 7}, LossMask: []uint8{0, 1, 0, 1}}}
	la, na, _ := m.Loss(a)
	full := []Sequence{{Tokens: []int32{12, 3, 5, 7}, LossMask: []uint8{0, 1, 1, 1}}}
	lf, nf, _ := m.Loss(full)
	if na != 2 || nf != 3 || !(lf > la) {
		t.Fatalf("masked loss %v over %d, full loss %v over %d", la, na, lf, nf)
	}
}
