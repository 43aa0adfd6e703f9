package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/model/llama"
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

// familyConfigs are tiny configs with each feature that separates the
// families model/llama builds, alone and combined.
func familyConfigs() map[string]Config {
	qwen2 := tinyConfig()
	qwen2.ModelType, qwen2.QKVBias = "qwen2", true
	llamaBias := tinyConfig()
	llamaBias.QKVBias, llamaBias.OBias = true, true
	headDim := tinyConfig()
	headDim.HeadDim = 6 // attention width 12 ≠ Dim 8
	qwen3 := tinyConfig()
	qwen3.ModelType, qwen3.QKNorm, qwen3.HeadDim, qwen3.UntiedHead = "qwen3", true, 6, true
	qwen3Bias := qwen3
	qwen3Bias.QKVBias, qwen3Bias.OBias = true, true
	cases := map[string]Config{
		"qwen2-qkv-bias": qwen2, "llama-attention-bias": llamaBias, "head-dim": headDim,
		"qwen3-qk-norm": qwen3, "qwen3-qk-norm-bias": qwen3Bias,
	}
	for name, c := range ropeConfigs() {
		cases[name] = c
	}
	return cases
}

// ropeConfigs are the tiny config with each rope_scaling type, set so that
// every branch of its formula is taken at head dim 4 (inverse frequencies 1
// and 0.01, wavelengths 2π and 628): llama3's smooth band and divided band,
// yarn's attention scaling 0.1·ln 4 + 1 ≈ 1.14, and dynamic's per-length
// tables (max_position_embeddings 4: tinyBatch's 7-token sequence gets
// tables of its own).
func ropeConfigs() map[string]Config {
	with := func(rs string) Config {
		c := tinyConfig()
		c.RopeScaling = rs
		return c
	}
	yarnQwen3 := with(`{"rope_type":"yarn","factor":4,"original_max_position_embeddings":8}`)
	yarnQwen3.ModelType, yarnQwen3.QKNorm, yarnQwen3.HeadDim = "qwen3", true, 6
	dynamic := with(`{"rope_type":"dynamic","factor":3}`)
	dynamic.RopeMaxPos = 4
	return map[string]Config{
		"rope-linear":     with(`{"type":"linear","factor":2}`),
		"rope-llama3":     with(`{"rope_type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8}`),
		"rope-yarn":       with(`{"rope_type":"yarn","factor":4,"original_max_position_embeddings":8}`),
		"rope-yarn-qwen3": yarnQwen3,
		"rope-dynamic":    dynamic,
	}
}

// TestGradientCheckFamilies runs the central-difference check on every
// family feature: q/k/v and o biases, per-head q/k RMSNorm, an attention
// width other than Dim and each scaled RoPE (attention scaling included). A
// wrong bias sum, a norm backward over the wrong rows, a stride of Dim where
// Heads·HeadDim belongs or a backward rotation with other tables than the
// forward's fails it.
func TestGradientCheckFamilies(t *testing.T) {
	for name, c := range familyConfigs() {
		t.Run(name, func(t *testing.T) {
			m := tinyModelWith(t, c)
			for _, p := range m.Params {
				// Unit-RMS heads times weights up to 1.5 make attention
				// sharp enough that the loss's curvature, not the gradient,
				// dominates a difference at eps = 3e-3 (measured: the error
				// falls as eps² and the analytic value is its limit).
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
			checkGradient(t, m, mean, 2e-4)
		})
	}
}

// checkGradient compares every Param.G of m with a central finite
// difference of objective, within absTol + 2% of the numeric value, and logs
// the largest relative error per kind of tensor (the name without its layer).
func checkGradient(t *testing.T, m *Model, objective func() float64, absTol float64) {
	t.Helper()
	checkGradientWith(t, m, objective, 3e-3, absTol, 2e-2)
}

// checkGradientWith is checkGradient with the difference step eps and the
// bound absTol + relTol·|numeric|, for a model of either precision.
func checkGradientWith[F Float](t *testing.T, m *ModelOf[F], objective func() float64, eps, absTol, relTol float64) {
	t.Helper()
	worst := 0.0
	byKind := map[string]float64{}
	var kinds []string
	for _, p := range m.Params {
		kind := p.Name
		if i := strings.Index(kind, "layers."); i >= 0 {
			rest := kind[i+len("layers."):]
			kind = rest[strings.Index(rest, ".")+1:]
		}
		if _, ok := byKind[kind]; !ok {
			kinds = append(kinds, kind)
			byKind[kind] = 0
		}
		for i := range p.W {
			w := p.W[i]
			p.W[i] = w + F(eps)
			up := objective()
			p.W[i] = w - F(eps)
			down := objective()
			p.W[i] = w
			num := (up - down) / (2 * eps)
			ana := float64(p.G[i])
			diff := math.Abs(num - ana)
			if diff > absTol+relTol*math.Abs(num) {
				t.Errorf("%s[%d]: analytic %.6f, numeric %.6f", p.Name, i, ana, num)
			}
			rel := diff / (1e-3 + math.Abs(num))
			worst = max(worst, rel)
			byKind[kind] = max(byKind[kind], rel)
		}
	}
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %.2g", k, byKind[k]))
	}
	t.Logf("largest |analytic - numeric|/(1e-3+|numeric|) = %.2g; by tensor: %s", worst, strings.Join(parts, ", "))
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

// TestRopeTables: each rope type's tables are model/llama's RoPE (the
// builder's): cos and sin of position·inv_freq times the attention scaling;
// dynamic gives a sequence past max_position_embeddings tables of its own
// and every shorter one plain RoPE.
func TestRopeTables(t *testing.T) {
	for name, c := range ropeConfigs() {
		t.Run(name, func(t *testing.T) {
			m, err := NewModel(c, 1)
			if err != nil {
				t.Fatal(err)
			}
			half := c.HeadDimension() / 2
			check := func(rt ropeTables[float32], seqLen, freqLen int) {
				inv, scale := llama.RoPE(c.ropeConfig(), freqLen)
				for p := range seqLen {
					for i := range half {
						a := float64(float32(p) * float32(inv[i]))
						if d := math.Abs(float64(rt.cos[p*half+i]) - math.Cos(a)*scale); d > 1e-6 {
							t.Fatalf("length %d position %d pair %d: cos %g, want %g", seqLen, p, i, rt.cos[p*half+i], math.Cos(a)*scale)
						}
						if d := math.Abs(float64(rt.sin[p*half+i]) - math.Sin(a)*scale); d > 1e-6 {
							t.Fatalf("length %d position %d pair %d: sin %g, want %g", seqLen, p, i, rt.sin[p*half+i], math.Sin(a)*scale)
						}
					}
				}
			}
			check(m.ropeTab, c.MaxPos, min(c.MaxPos, c.ropeMaxPos()))
			long, err := m.tablesFor(7)
			if err != nil {
				t.Fatal(err)
			}
			if c.ropeDynamic() {
				check(long, 7, 7)
				if long.cos[7*half-1] == m.ropeTab.cos[7*half-1] {
					t.Fatal("dynamic: a 7-token sequence past max_position_embeddings 4 got the plain tables")
				}
			} else if &long.cos[0] != &m.ropeTab.cos[0] {
				t.Fatal("a static rope type made per-length tables")
			}
		})
	}
	// Yarn's attention scaling really multiplies: position 0 has cos = scale.
	m, err := NewModel(ropeConfigs()["rope-yarn"], 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := float32(0.1*math.Log(4) + 1); math.Abs(float64(m.ropeTab.cos[0]-want)) > 1e-6 {
		t.Fatalf("yarn cos at position 0 = %g, want the attention scaling %g", m.ropeTab.cos[0], want)
	}
}
