package train

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/model/llama"
)

// as64 returns a float64 model with m's weights.
func as64(t *testing.T, m *Model) *Model64 {
	t.Helper()
	m64, err := NewModelOf[float64](m.Config, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := m64.SetWeights(m.Weights()); err != nil {
		t.Fatal(err)
	}
	return m64
}

// TestGradientCheckFloat64 runs the central-difference check on the float64
// model, plain and with every family feature, at a bound no float32 model
// meets: with eps 1e-5 the difference's truncation error (∝ eps²) and its
// rounding (∝ 1e-16/eps) are both below 1e-8, so the analytic gradient must
// equal it to 1e-6 relative. (The float32 check needs eps 3e-3 and allows 2%.)
func TestGradientCheckFloat64(t *testing.T) {
	cases := familyConfigs()
	cases["llama"] = tinyConfig()
	untied := tinyConfig()
	untied.UntiedHead = true
	cases["untied"] = untied
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m := as64(t, tinyModelWith(t, c))
			for _, p := range m.Params {
				if strings.HasSuffix(p.Name, "_norm.weight") && strings.Contains(p.Name, "self_attn") {
					for i := range p.W {
						p.W[i] *= 0.5
					}
				}
			}
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
			checkGradientWith(t, m, mean, 1e-5, 1e-8, 1e-6)
		})
	}
}

// TestLogprobGradientCheckFloat64: the gradient of a weighted sum of
// logprobs at two temperatures, from BackwardLogprobs on the float64 model,
// equals central differences to 1e-6 relative.
func TestLogprobGradientCheckFloat64(t *testing.T) {
	m := as64(t, tinyModel(t))
	objective, _ := logprobObjective(t, m)
	checkGradientWith(t, m, objective, 1e-5, 1e-8, 1e-6)
}

// TestFloat64AgreesWithFloat32: on the same weights the two precisions give
// the same logprobs, entropies and gradients up to float32 rounding, and
// the float64 logits equal model/llama's reference forward as the float32
// model's do. The float32 model's results are its own (the float64 one
// shares its code, not its numbers).
func TestFloat64AgreesWithFloat32(t *testing.T) {
	cases := familyConfigs()
	cases["llama"] = tinyConfig()
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			m32 := tinyModelWith(t, cases[name])
			m64 := as64(t, m32)
			batch := tinyBatch()
			temps := []float64{0.7, 1.3, 1}
			d := []float64{0.9, -1.7, 0.4, 1.1, -0.6}
			m32.ZeroGrad()
			m64.ZeroGrad()
			lp32, err := m32.ForwardLogprobs(batch, temps)
			if err != nil {
				t.Fatal(err)
			}
			lp64, err := m64.ForwardLogprobs(batch, temps)
			if err != nil {
				t.Fatal(err)
			}
			if err := m64.BackwardLogprobs(lp32, d); err == nil {
				t.Fatal("BackwardLogprobs took another model's pass")
			}
			worstLp, worstG := 0.0, 0.0
			for i := range lp32.Logprobs {
				worstLp = max(worstLp, math.Abs(lp32.Logprobs[i]-lp64.Logprobs[i]), math.Abs(lp32.Entropy[i]-lp64.Entropy[i]))
			}
			if err := m32.BackwardLogprobs(lp32, d); err != nil {
				t.Fatal(err)
			}
			if err := m64.BackwardLogprobs(lp64, d); err != nil {
				t.Fatal(err)
			}
			var dd, gg float64
			for k, p := range m32.Params {
				for i, g := range p.G {
					dd += (float64(g) - m64.Params[k].G[i]) * (float64(g) - m64.Params[k].G[i])
					gg += m64.Params[k].G[i] * m64.Params[k].G[i]
				}
			}
			worstG = math.Sqrt(dd / gg)
			// the logits against the reference forward
			ref, err := llama.NewReference(m32.LlamaConfig(12, 12, 12), m32.LlamaWeights())
			if err != nil {
				t.Fatal(err)
			}
			tokens := []int32{12, 3, 5, 7, 1, 2, 9, 0, 11, 4, 8, 8, 6, 10, 2, 1}[:m32.Config.MaxPos]
			got, err := m64.Logits(tokens)
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]int64, len(tokens))
			for i, v := range tokens {
				ids[i] = int64(v)
			}
			out, err := ref.Forward(llama.Inputs{InputIDs: [][]int64{ids}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			worstLogit := 0.0
			for s := range tokens {
				for j, w := range out.At(0, s) {
					worstLogit = max(worstLogit, math.Abs(got[s*m32.Config.Vocab+j]-float64(w)))
				}
			}
			if worstLp > 1e-5 || worstG > 1e-4 || worstLp == 0 || worstLogit > 1e-4 {
				t.Fatalf("float32 vs float64: logprob/entropy %.3g, gradient ‖Δ‖/‖g‖ %.3g; float64 logits vs reference %.3g", worstLp, worstG, worstLogit)
			}
			t.Logf("float32 vs float64: logprob/entropy %.2g, gradient ‖Δ‖/‖g‖ %.2g; float64 logits vs reference %.2g", worstLp, worstG, worstLogit)
		})
	}
}

// TestNetState: Moments, SetState and RoundTo32 cross the Net interface in
// float32, and a float64 model rounds to exactly what it wrote.
func TestNetState(t *testing.T) {
	m32 := tinyModel(t)
	for _, p := range m32.Params {
		for i := range p.M {
			p.M[i], p.V[i] = float32(i)*1e-3, float32(i)*1e-4
		}
	}
	for _, prec := range []Precision{Float32, Float64} {
		n, err := NewNet(m32.Config, 0, prec)
		if err != nil {
			t.Fatal(err)
		}
		if n.Precision() != prec {
			t.Fatalf("NewNet(%s).Precision() = %s", prec, n.Precision())
		}
		w, mo, v := m32.Weights(), map[string][]float32{}, map[string][]float32{}
		for _, x := range m32.Moments() {
			mo[x.Name], v[x.Name] = x.M, x.V
		}
		if err := n.SetState(w, mo, map[string][]float32{}); err == nil || !strings.Contains(err.Error(), "second moment") {
			t.Fatalf("SetState without second moments: %v", err)
		}
		if err := n.SetState(w, mo, v); err != nil {
			t.Fatal(err)
		}
		for _, x := range n.Moments() {
			for i := range x.M {
				if x.M[i] != mo[x.Name][i] || x.V[i] != v[x.Name][i] {
					t.Fatalf("%s: moments %s[%d] %g/%g, set %g/%g", prec, x.Name, i, x.M[i], x.V[i], mo[x.Name][i], v[x.Name][i])
				}
			}
		}
	}
	m64 := as64(t, m32)
	m64.Params[0].W[0] += 1e-12
	m64.Params[0].M[0] = 1.0 / 3
	m64.RoundTo32()
	if m64.Params[0].W[0] != float64(m32.Params[0].W[0]) || m64.Params[0].M[0] != float64(float32(1.0/3)) {
		t.Fatalf("RoundTo32: %v, %v", m64.Params[0].W[0], m64.Params[0].M[0])
	}
	if _, err := ParsePrecision("bf16"); err == nil {
		t.Fatal("ParsePrecision took bf16")
	}
}
