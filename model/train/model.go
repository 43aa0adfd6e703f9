// Package train trains small Llama-architecture causal language models in pure
// Go: a hand-written forward and backward pass over gonum's blas32 Sgemm, AdamW
// with a cosine learning-rate schedule, seeded initialisation and data order,
// and a completion-only loss in which tokens injected by the environment (tool
// results) are masked out, as they are in RL.
//
// The math is Hugging Face's LlamaForCausalLM (tied or untied head): RMSNorm
// x*rsqrt(mean(x²)+eps)*w, rotary embeddings with rotate_half (non-interleaved
// halves), grouped-query attention, SwiGLU MLP. Weights are stored under HF
// names in PyTorch Linear layout ([out, in], row-major), so a trained model
// is written to safetensors as is.
package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Config is the architecture.
type Config struct {
	Vocab     int     // vocabulary size
	Dim       int     // hidden size
	Layers    int     // decoder layers
	Heads     int     // attention heads
	KVHeads   int     // key/value heads (divides Heads)
	FF        int     // MLP intermediate size
	MaxPos    int     // longest sequence the model is trained and exported for
	RopeTheta float64 // rotary base
	NormEps   float64 // RMSNorm epsilon
	// UntiedHead gives the model its own output projection lm_head.weight
	// [Vocab, Dim] instead of reusing the embedding (tie_word_embeddings
	// false, as the "tiny" random shape has).
	UntiedHead bool
}

// HeadDim is Dim / Heads.
func (c Config) HeadDim() int { return c.Dim / c.Heads }

// Validate reports an unusable configuration.
func (c Config) Validate() error {
	switch {
	case c.Vocab < 2 || c.Dim < 2 || c.Layers < 1 || c.Heads < 1 || c.KVHeads < 1 || c.FF < 1 || c.MaxPos < 2:
		return fmt.Errorf("train: config has a non-positive size: %+v", c)
	case c.Dim%c.Heads != 0:
		return fmt.Errorf("train: dim %d not divisible by heads %d", c.Dim, c.Heads)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("train: heads %d not divisible by kv heads %d", c.Heads, c.KVHeads)
	case c.HeadDim()%2 != 0:
		return fmt.Errorf("train: head dim %d is odd (rotary needs pairs)", c.HeadDim())
	}
	return nil
}

// Param is one weight tensor with its gradient and AdamW moments.
type Param struct {
	Name  string // Hugging Face tensor name
	Shape []int  // [out, in] for matrices
	W     []float32
	G     []float32 // gradient, accumulated by Model.Step
	M, V  []float32 // AdamW first and second moments
	Decay bool      // weight decay applies (matrices and embeddings, not norms)
}

func newParam(name string, decay bool, shape ...int) *Param {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return &Param{Name: name, Shape: shape, W: make([]float32, n), G: make([]float32, n), M: make([]float32, n), V: make([]float32, n), Decay: decay}
}

// layer holds one decoder layer's parameters.
type layer struct {
	attnNorm, wq, wk, wv, wo, mlpNorm, wg, wu, wd *Param
}

// Model is the trainable model. Not safe for concurrent use.
type Model struct {
	Config Config
	// Params lists every tensor in a fixed order (embedding, layers, final
	// norm, then lm_head when untied).
	Params    []*Param
	embed     *Param
	layers    []layer
	finalNorm *Param
	head      *Param    // the output projection: embed when tied, else lm_head.weight
	cos, sin  []float32 // [MaxPos, HeadDim/2]
}

// NewModel allocates a model and initialises it from seed: matrices from
// N(0, 0.02²), the output projections of each residual branch (o_proj,
// down_proj) scaled by 1/sqrt(2·Layers) as in GPT-2, norms to 1.
func NewModel(c Config, seed uint64) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &Model{Config: c}
	add := func(p *Param) *Param { m.Params = append(m.Params, p); return p }
	kv := c.KVHeads * c.HeadDim()
	m.embed = add(newParam("model.embed_tokens.weight", true, c.Vocab, c.Dim))
	for i := range c.Layers {
		pre := fmt.Sprintf("model.layers.%d.", i)
		m.layers = append(m.layers, layer{
			attnNorm: add(newParam(pre+"input_layernorm.weight", false, c.Dim)),
			wq:       add(newParam(pre+"self_attn.q_proj.weight", true, c.Dim, c.Dim)),
			wk:       add(newParam(pre+"self_attn.k_proj.weight", true, kv, c.Dim)),
			wv:       add(newParam(pre+"self_attn.v_proj.weight", true, kv, c.Dim)),
			wo:       add(newParam(pre+"self_attn.o_proj.weight", true, c.Dim, c.Dim)),
			mlpNorm:  add(newParam(pre+"post_attention_layernorm.weight", false, c.Dim)),
			wg:       add(newParam(pre+"mlp.gate_proj.weight", true, c.FF, c.Dim)),
			wu:       add(newParam(pre+"mlp.up_proj.weight", true, c.FF, c.Dim)),
			wd:       add(newParam(pre+"mlp.down_proj.weight", true, c.Dim, c.FF)),
		})
	}
	m.finalNorm = add(newParam("model.norm.weight", false, c.Dim))
	m.head = m.embed
	if c.UntiedHead {
		m.head = add(newParam("lm_head.weight", true, c.Vocab, c.Dim))
	}
	r := rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d))
	resid := 0.02 / math.Sqrt(2*float64(c.Layers))
	for _, p := range m.Params {
		switch {
		case len(p.Shape) == 1:
			for i := range p.W {
				p.W[i] = 1
			}
		default:
			std := 0.02
			if strings.HasSuffix(p.Name, "o_proj.weight") || strings.HasSuffix(p.Name, "down_proj.weight") {
				std = resid
			}
			for i := range p.W {
				p.W[i] = float32(r.NormFloat64() * std)
			}
		}
	}
	m.initRope()
	return m, nil
}

// initRope fills the rotary tables the way HF does: inv_freq computed in
// float32, angle = position * inv_freq.
func (m *Model) initRope() {
	c := m.Config
	half := c.HeadDim() / 2
	m.cos = make([]float32, c.MaxPos*half)
	m.sin = make([]float32, c.MaxPos*half)
	for i := range half {
		inv := float32(1 / math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadDim())))
		for p := range c.MaxPos {
			a := float64(float32(p) * inv)
			m.cos[p*half+i] = float32(math.Cos(a))
			m.sin[p*half+i] = float32(math.Sin(a))
		}
	}
}

// NumParams counts the weights (a tied embedding counted once).
func (m *Model) NumParams() int {
	n := 0
	for _, p := range m.Params {
		n += len(p.W)
	}
	return n
}

// Weights returns the tensors by HF name (a tied embedding doubles as lm_head).
// The slices alias the model's weights.
func (m *Model) Weights() map[string][]float32 {
	out := map[string][]float32{}
	for _, p := range m.Params {
		out[p.Name] = p.W
	}
	return out
}

// SetWeights copies weights by HF name into the model; every parameter must be present.
func (m *Model) SetWeights(w map[string][]float32) error {
	for _, p := range m.Params {
		src, ok := w[p.Name]
		if !ok {
			return fmt.Errorf("train: weight %s missing", p.Name)
		}
		if len(src) != len(p.W) {
			return fmt.Errorf("train: weight %s has %d values, want %d", p.Name, len(src), len(p.W))
		}
		copy(p.W, src)
	}
	return nil
}

// ZeroGrad clears every gradient.
func (m *Model) ZeroGrad() {
	for _, p := range m.Params {
		clear(p.G)
	}
}
