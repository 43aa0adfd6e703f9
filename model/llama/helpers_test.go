package llama

import (
	"encoding/json"
	"math"
	"testing"
)

// testConfigs are small variants that between them cover grouped-query
// attention (nrep 2 and 1), tied and untied heads, Qwen2 q/k/v biases and
// Llama attention_bias (with an o bias). Their weights are larger than real
// initialisations so that attention is peaked and a wrong mask, position or
// head order changes the logits by far more than the 1e-4 tolerance.
func testConfigs(t *testing.T) map[string]Config {
	t.Helper()
	tiny, err := ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	tiny.InitializerRange = 0.2
	qwen := tiny
	qwen.ModelType = "qwen2"
	qwen.TieWordEmbeddings = true
	qwen.NumKeyValueHeads = 1 // nrep 4
	qwen.RopeTheta = 1e6
	mha := tiny
	mha.AttentionBias = true
	mha.NumKeyValueHeads = 4 // nrep 1
	mha.HeadDim = 0          // derived: 64/4 = 16
	mha.NumHiddenLayers = 3
	qwen3 := tiny
	qwen3.ModelType = "qwen3"
	qwen3.HeadDim = 32 // explicit, != hidden/heads = 16
	qwen3.TieWordEmbeddings = true
	qwen3.RopeTheta = 1e6
	// The rope variants on tiny (D = 16, theta 1e4: wavelengths 6.3 ... 2e4),
	// with context lengths that put frequencies on both sides of each
	// variant's bounds and sequences of the tests (up to 11 tokens) past
	// dynamic's max_position_embeddings.
	rope := func(scaling string, maxPos int) Config {
		c := tiny
		c.RopeScaling = json.RawMessage(scaling)
		if maxPos > 0 {
			c.MaxPositionEmbeddings = maxPos
		}
		return c
	}
	out := map[string]Config{"tiny": tiny, "qwen2_tied_bias": qwen, "mha_attention_bias": mha, "qwen3": qwen3,
		"rope_linear":  rope(`{"type": "linear", "factor": 2.0}`, 0),
		"rope_dynamic": rope(`{"rope_type": "dynamic", "factor": 3.0}`, 6),
		"rope_llama3": rope(`{"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
			"original_max_position_embeddings": 64}`, 0),
		"rope_yarn": rope(`{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256}`, 0),
	}
	// The tiny family shapes that tinymodel.WriteShape writes for other
	// packages' tests, as they are.
	for _, name := range []string{"tiny-qwen2.5", "tiny-qwen3", "tiny-llama3.2"} {
		c, err := ShapeConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		c.InitializerRange = 0.2
		out[name] = c
	}
	return out
}

func mustRandom(t *testing.T, cfg Config, seed uint64) Weights {
	t.Helper()
	w, err := RandomWeights(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func mustReference(t *testing.T, cfg Config, w Weights) *Reference {
	t.Helper()
	r, err := NewReference(cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tokens returns n deterministic token ids below vocab.
func tokens(n, vocab int, salt int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = (int64(i)*37 + salt*101 + 11) % int64(vocab)
	}
	return out
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var m float64
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		if d != d {
			return math.Inf(1)
		}
		m = max(m, d)
	}
	return m
}

func assertClose(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if d := maxAbsDiff(got, want); d > tol {
		t.Fatalf("%s: max abs diff %.3g > %.0e (len %d vs %d)", what, d, tol, len(got), len(want))
	}
}

func assertFinite(t *testing.T, what string, x []float32) {
	t.Helper()
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("%s[%d] = %v", what, i, v)
		}
	}
}

func ones(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

func float32frombits(b uint32) float32 { return math.Float32frombits(b) }
