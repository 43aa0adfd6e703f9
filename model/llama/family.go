package llama

import (
	"fmt"
	"sort"
	"strings"
)

// familyTraits is what a model_type fixes about the architecture, as
// transformers' modeling_<type>.py builds it. Everything the graph builder,
// the reference forward and the learner branch on is a field here or in
// Family; none of them switch on model_type.
type familyTraits struct {
	// Architecture is the class name config.json's architectures lists.
	Architecture string
	// QKVBiasAlways: q, k and v projections carry biases whatever
	// attention_bias says, and the o projection never does (Qwen2).
	QKVBiasAlways bool
	// QKNorm: an RMSNorm over head_dim on every query and key head, after
	// the projection and before RoPE (Qwen3's q_norm / k_norm).
	QKNorm bool
	// SlidingWindowAlways: sliding_window applies whenever it is set
	// (Mistral); otherwise only with use_sliding_window (Qwen2, Qwen3).
	SlidingWindowAlways bool
}

// families lists the model types this package builds.
var families = map[string]familyTraits{
	"llama":   {Architecture: "LlamaForCausalLM"},
	"mistral": {Architecture: "MistralForCausalLM", SlidingWindowAlways: true},
	"qwen2":   {Architecture: "Qwen2ForCausalLM", QKVBiasAlways: true},
	"qwen3":   {Architecture: "Qwen3ForCausalLM", QKNorm: true},
}

// ModelTypes returns the supported model_type values, sorted.
func ModelTypes() []string {
	var names []string
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Family is the resolved description of what separates one supported
// architecture from plain Llama, for one config: the fields every
// implementation of the forward (ONNX graph, Go reference, learner) reads.
type Family struct {
	ModelType    string // config.json model_type
	Architecture string // e.g. "Qwen3ForCausalLM"
	QKVBias      bool   // q, k, v projections have biases
	OBias        bool   // the o projection has a bias
	// QKNorm: q_norm / k_norm weights [head_dim], RMSNorm per head over
	// head_dim (eps rms_norm_eps) applied after projection, before RoPE.
	QKNorm bool
	// HeadDim is the per-head width D (explicit head_dim or hidden/heads).
	HeadDim int
	// TiedEmbeddings: the LM head is the token embedding.
	TiedEmbeddings bool
	// Rope is the parsed rope_scaling (RopeDefault when absent).
	Rope RopeScaling
}

// Family resolves the family description of c. It fails for an unknown
// model_type or a rope_scaling it cannot parse.
func (c Config) Family() (Family, error) {
	tr, ok := families[c.ModelType]
	if !ok {
		return Family{}, fmt.Errorf("config: model_type %q is not supported (want one of %s)", c.ModelType, strings.Join(ModelTypes(), ", "))
	}
	rs, err := c.Rope()
	if err != nil {
		return Family{}, err
	}
	f := Family{
		ModelType: c.ModelType, Architecture: tr.Architecture,
		QKVBias: tr.QKVBiasAlways || c.AttentionBias, OBias: !tr.QKVBiasAlways && c.AttentionBias,
		QKNorm: tr.QKNorm, HeadDim: c.HeadDimension(), TiedEmbeddings: c.TieWordEmbeddings, Rope: rs,
	}
	return f, nil
}

// traits returns the family traits of c's model type (zero for an unknown
// one, which Validate rejects).
func (c Config) traits() familyTraits { return families[c.ModelType] }

// QKVBias reports whether q, k and v projections carry biases.
func (c Config) QKVBias() bool { return c.traits().QKVBiasAlways || c.AttentionBias }

// OBias reports whether the o projection carries a bias.
func (c Config) OBias() bool { return !c.traits().QKVBiasAlways && c.AttentionBias }

// QKNorm reports whether each query and key head is RMS-normalised over
// head_dim before RoPE (weights self_attn.q_norm.weight and k_norm.weight).
func (c Config) QKNorm() bool { return c.traits().QKNorm }
