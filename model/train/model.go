// Package train trains small Llama-family causal language models (Llama,
// Mistral, Qwen2, Qwen3) in pure Go: a hand-written forward and backward
// pass over gonum's blas32 Sgemm (or the packed SIMD kernel, gemm_simd.go),
// in float32 or, one implementation generic over the float type (ModelOf),
// in float64 over gonum's blas64 Dgemm; AdamW with a cosine learning-rate
// schedule, seeded initialisation and data order, and a completion-only loss
// in which tokens injected by the environment (tool results) are masked
// out, as they are in RL.
//
// The math is Hugging Face's LlamaForCausalLM (tied or untied head): RMSNorm
// x*rsqrt(mean(x²)+eps)*w, rotary embeddings with rotate_half (non-interleaved
// halves), grouped-query attention, SwiGLU MLP. Weights are stored under HF
// names in PyTorch Linear layout ([out, in], row-major), so a trained model
// is written to safetensors as is. The features that separate the families
// the builder builds are fields of Config: q/k/v and o projection biases
// (Qwen2ForCausalLM, Llama's attention_bias), per-head q/k RMSNorm and an
// explicit head width (Qwen3ForCausalLM), and scaled RoPE (rope_scaling, whose
// tables model/llama computes as transformers does).
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
	// ModelType is config.json's model_type written back on export ("" is
	// "llama"). The math reads only the feature fields below.
	ModelType string
	// HeadDim is the per-head width; 0 means Dim/Heads. The attention width
	// Heads·HeadDim may differ from Dim (Qwen3): q_proj is [Heads·HeadDim,
	// Dim] and o_proj [Dim, Heads·HeadDim].
	HeadDim int
	// QKVBias gives q_proj, k_proj and v_proj a bias (Qwen2; Llama and Qwen3
	// attention_bias); OBias gives o_proj one (Llama and Qwen3
	// attention_bias).
	QKVBias, OBias bool
	// QKNorm applies RMSNorm over HeadDim to every query and key head after
	// the projection and before RoPE, with weights
	// self_attn.q_norm.weight and self_attn.k_norm.weight [HeadDim] shared
	// by the heads (Qwen3Attention) and epsilon NormEps.
	QKNorm bool
	// RopeScaling is config.json's rope_scaling object verbatim ("" or
	// "null": plain RoPE). The inverse frequencies and attention scaling
	// come from model/llama's RoPE, as the builder's graph and reference use
	// them; for rope type "dynamic" they depend on each sequence's length
	// (see ropeTables).
	RopeScaling string
	// RopeMaxPos is config.json's max_position_embeddings when it differs
	// from MaxPos (0: MaxPos): the length the rope_scaling formulas are
	// relative to.
	RopeMaxPos int
}

// HeadDimension returns the per-head width: HeadDim, or Dim/Heads when unset.
func (c Config) HeadDimension() int {
	if c.HeadDim != 0 {
		return c.HeadDim
	}
	return c.Dim / c.Heads
}

// attnWidth is Heads·HeadDimension, the width of q and of o_proj's input.
func (c Config) attnWidth() int { return c.Heads * c.HeadDimension() }

// Validate reports an unusable configuration.
func (c Config) Validate() error {
	switch {
	case c.Vocab < 2 || c.Dim < 2 || c.Layers < 1 || c.Heads < 1 || c.KVHeads < 1 || c.FF < 1 || c.MaxPos < 2:
		return fmt.Errorf("train: config has a non-positive size: %+v", c)
	case c.HeadDim < 0:
		return fmt.Errorf("train: head dim %d is negative", c.HeadDim)
	case c.HeadDim == 0 && c.Dim%c.Heads != 0:
		return fmt.Errorf("train: dim %d not divisible by heads %d (set HeadDim)", c.Dim, c.Heads)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("train: heads %d not divisible by kv heads %d", c.Heads, c.KVHeads)
	case c.HeadDimension()%2 != 0:
		return fmt.Errorf("train: head dim %d is odd (rotary needs pairs)", c.HeadDimension())
	}
	if _, _, err := c.ropeFreqs(c.MaxPos); err != nil {
		return err
	}
	return nil
}

// Float is the precision a model computes in: float32 (the trainer's and
// the learner's default, with the packed SIMD GEMM) or float64 (gonum's
// Dgemm; for checking another trainer against this one, see Precision).
type Float interface{ float32 | float64 }

// ParamOf is one weight tensor with its gradient and AdamW moments.
type ParamOf[F Float] struct {
	Name  string // Hugging Face tensor name
	Shape []int  // [out, in] for matrices
	W     []F
	G     []F  // gradient, accumulated by Model.Step
	M, V  []F  // AdamW first and second moments
	Decay bool // weight decay applies (matrices and embeddings, not norms)
}

// Param is a float32 parameter.
type Param = ParamOf[float32]

func newParam[F Float](name string, decay bool, shape ...int) *ParamOf[F] {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return &ParamOf[F]{Name: name, Shape: shape, W: make([]F, n), G: make([]F, n), M: make([]F, n), V: make([]F, n), Decay: decay}
}

// layer holds one decoder layer's parameters; bq, bk, bv, bo, qNorm and
// kNorm are nil when the config lacks the feature.
type layer[F Float] struct {
	attnNorm, wq, wk, wv, wo, mlpNorm, wg, wu, wd *ParamOf[F]
	bq, bk, bv, bo, qNorm, kNorm                  *ParamOf[F]
}

// ModelOf is the trainable model computing in F. Not safe for concurrent
// use. The math is one implementation for both precisions; only the GEMM
// differs (gemm.go).
type ModelOf[F Float] struct {
	Config Config
	// Params lists every tensor in a fixed order (embedding, layers, final
	// norm, then lm_head when untied).
	Params    []*ParamOf[F]
	embed     *ParamOf[F]
	layers    []layer[F]
	finalNorm *ParamOf[F]
	head      *ParamOf[F]           // the output projection: embed when tied, else lm_head.weight
	ropeTab   ropeTables[F]         // positions 0..MaxPos-1
	dynRope   map[int]ropeTables[F] // rope type dynamic: tables by sequence length
	// spare is the last released pass, whose buffers the next forward
	// reuses (workspace.go); nil while a pass holds them.
	spare *pass[F]
}

// Model is the float32 model.
type Model = ModelOf[float32]

// Model64 is the float64 model.
type Model64 = ModelOf[float64]

// NewModel allocates a float32 model and initialises it from seed: matrices
// from N(0, 0.02²), the output projections of each residual branch (o_proj,
// down_proj) scaled by 1/sqrt(2·Layers) as in GPT-2, norms to 1, biases
// to 0.
func NewModel(c Config, seed uint64) (*Model, error) { return NewModelOf[float32](c, seed) }

// NewModelOf is NewModel in precision F; the initial weights are the
// float32 model's (drawn, then rounded to float32), whatever F.
func NewModelOf[F Float](c Config, seed uint64) (*ModelOf[F], error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &ModelOf[F]{Config: c}
	add := func(p *ParamOf[F]) *ParamOf[F] { m.Params = append(m.Params, p); return p }
	hd, aw := c.HeadDimension(), c.attnWidth()
	kv := c.KVHeads * hd
	m.embed = add(newParam[F]("model.embed_tokens.weight", true, c.Vocab, c.Dim))
	for i := range c.Layers {
		pre := fmt.Sprintf("model.layers.%d.", i)
		var l layer[F]
		l.attnNorm = add(newParam[F](pre+"input_layernorm.weight", false, c.Dim))
		l.wq = add(newParam[F](pre+"self_attn.q_proj.weight", true, aw, c.Dim))
		if c.QKVBias {
			l.bq = add(newParam[F](pre+"self_attn.q_proj.bias", false, aw))
		}
		l.wk = add(newParam[F](pre+"self_attn.k_proj.weight", true, kv, c.Dim))
		if c.QKVBias {
			l.bk = add(newParam[F](pre+"self_attn.k_proj.bias", false, kv))
		}
		l.wv = add(newParam[F](pre+"self_attn.v_proj.weight", true, kv, c.Dim))
		if c.QKVBias {
			l.bv = add(newParam[F](pre+"self_attn.v_proj.bias", false, kv))
		}
		l.wo = add(newParam[F](pre+"self_attn.o_proj.weight", true, c.Dim, aw))
		if c.OBias {
			l.bo = add(newParam[F](pre+"self_attn.o_proj.bias", false, c.Dim))
		}
		if c.QKNorm {
			l.qNorm = add(newParam[F](pre+"self_attn.q_norm.weight", false, hd))
			l.kNorm = add(newParam[F](pre+"self_attn.k_norm.weight", false, hd))
		}
		l.mlpNorm = add(newParam[F](pre+"post_attention_layernorm.weight", false, c.Dim))
		l.wg = add(newParam[F](pre+"mlp.gate_proj.weight", true, c.FF, c.Dim))
		l.wu = add(newParam[F](pre+"mlp.up_proj.weight", true, c.FF, c.Dim))
		l.wd = add(newParam[F](pre+"mlp.down_proj.weight", true, c.Dim, c.FF))
		m.layers = append(m.layers, l)
	}
	m.finalNorm = add(newParam[F]("model.norm.weight", false, c.Dim))
	m.head = m.embed
	if c.UntiedHead {
		m.head = add(newParam[F]("lm_head.weight", true, c.Vocab, c.Dim))
	}
	r := rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d))
	resid := 0.02 / math.Sqrt(2*float64(c.Layers))
	for _, p := range m.Params {
		switch {
		case strings.HasSuffix(p.Name, ".bias"):
			// zero, as allocated
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
				p.W[i] = F(float32(r.NormFloat64() * std))
			}
		}
	}
	rt, err := makeRopeTables[F](c, c.MaxPos, min(c.MaxPos, c.ropeMaxPos()))
	if err != nil {
		return nil, err
	}
	m.ropeTab = rt
	return m, nil
}

// NumParams counts the weights (a tied embedding counted once).
func (m *ModelOf[F]) NumParams() int {
	n := 0
	for _, p := range m.Params {
		n += len(p.W)
	}
	return n
}

// Weights returns the tensors by HF name (a tied embedding doubles as lm_head).
// The slices alias the model's weights.
func (m *ModelOf[F]) Weights() map[string][]F {
	out := map[string][]F{}
	for _, p := range m.Params {
		out[p.Name] = p.W
	}
	return out
}

// SetWeights copies float32 weights (a checkpoint's) by HF name into the
// model; every parameter must be present.
func (m *ModelOf[F]) SetWeights(w map[string][]float32) error {
	for _, p := range m.Params {
		src, ok := w[p.Name]
		if !ok {
			return fmt.Errorf("train: weight %s missing", p.Name)
		}
		if len(src) != len(p.W) {
			return fmt.Errorf("train: weight %s has %d values, want %d", p.Name, len(src), len(p.W))
		}
		for i, v := range src {
			p.W[i] = F(v)
		}
	}
	return nil
}

// ZeroGrad clears every gradient.
func (m *ModelOf[F]) ZeroGrad() {
	for _, p := range m.Params {
		clear(p.G)
	}
}
