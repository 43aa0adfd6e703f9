package train

import (
	"fmt"

	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/model/safetensors"
)

// LlamaConfig returns the model's Hugging Face config (float32), with bos,
// eos and pad set to the given ids: the family (model_type, its
// architectures filled in by model/llama), head_dim, attention_bias and
// rope_scaling as the Config says, so that a folder written from it loads
// back as the same architecture.
func (m *ModelOf[F]) LlamaConfig(bos, eos, pad int) llama.Config {
	c := m.Config
	hf := llama.Config{
		ModelType: c.modelType(),
		VocabSize: c.Vocab, HiddenSize: c.Dim, IntermediateSize: c.FF, NumHiddenLayers: c.Layers,
		NumAttentionHeads: c.Heads, NumKeyValueHeads: c.KVHeads, HeadDim: c.HeadDimension(), HiddenAct: "silu",
		RMSNormEps: c.NormEps, RopeTheta: c.RopeTheta, MaxPositionEmbeddings: c.ropeMaxPos(),
		TieWordEmbeddings: !c.UntiedHead, InitializerRange: 0.02,
		BOSTokenID: llama.TokenIDs{bos}, EOSTokenID: llama.TokenIDs{eos}, PadTokenID: llama.TokenIDs{pad},
		TorchDType: "float32", UseCache: true,
		// Qwen2 has q/k/v biases by construction; elsewhere attention_bias
		// puts them on q, k, v and o alike.
		AttentionBias: c.OBias,
	}
	if c.ropeScaled() {
		hf.RopeScaling = []byte(c.RopeScaling)
	}
	return hf
}

// modelType is config.json's model_type ("llama" when unset).
func (c Config) modelType() string {
	if c.ModelType == "" {
		return "llama"
	}
	return c.ModelType
}

// checkFamily reports a feature combination that the family's config.json
// cannot express (the written folder would load as another architecture).
func (c Config) checkFamily() error {
	hf := llama.Config{ModelType: c.modelType(), AttentionBias: c.OBias}
	switch {
	case hf.QKVBias() != c.QKVBias || hf.OBias() != c.OBias:
		return fmt.Errorf("train: model_type %s with q/k/v bias %v and o bias %v has no config.json form", hf.ModelType, c.QKVBias, c.OBias)
	case hf.QKNorm() != c.QKNorm:
		return fmt.Errorf("train: model_type %s with q/k norm %v has no config.json form", hf.ModelType, c.QKNorm)
	}
	return nil
}

// LlamaWeights returns the weights under their HF names in float32: the
// data aliases a float32 model's weights, and is a rounded copy of a
// float64 model's.
func (m *ModelOf[F]) LlamaWeights() llama.Weights {
	w := llama.Weights{}
	for _, p := range m.Params {
		w[p.Name] = llama.Tensor{Shape: append([]int(nil), p.Shape...), Data: To32(p.W)}
	}
	return w
}

// To32 returns x as float32: x itself when F is float32, else a copy
// rounded to nearest.
func To32[F Float](x []F) []float32 {
	if x32, ok := any(x).([]float32); ok {
		return x32
	}
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// FolderFiles are the non-weight files of a model folder.
type FolderFiles struct {
	TokenizerJSON    []byte            // tokenizer.json
	TokenizerConfig  []byte            // tokenizer_config.json (nil: derived by model/llama)
	GenerationConfig []byte            // generation_config.json (nil: derived)
	Extra            map[string][]byte // copied verbatim (prompt_format.json, tools.yaml, ...)
}

// WriteFolder writes a complete Hugging Face model folder through
// model/llama.WriteFolder: config.json, model.safetensors (F32),
// onnx/model.onnx (weights inline) and the given files. The bytes depend
// only on the weights, ids and files.
func (m *ModelOf[F]) WriteFolder(dir string, bos, eos, pad int, files FolderFiles) error {
	if err := m.Config.checkFamily(); err != nil {
		return fmt.Errorf("write model folder %s: %w", dir, err)
	}
	cfg := m.LlamaConfig(bos, eos, pad)
	_, err := llama.WriteFolder(dir, llama.FolderSpec{
		Config: cfg, Weights: m.LlamaWeights(),
		TokenizerJSON: files.TokenizerJSON, TokenizerConfig: files.TokenizerConfig,
		GenerationConfig: files.GenerationConfig, ExtraFiles: files.Extra,
		ONNX:        llama.ONNXOptions{External: llama.ExternalNever},
		Safetensors: true, SafetensorsDType: safetensors.F32,
	})
	if err != nil {
		return fmt.Errorf("write model folder %s: %w", dir, err)
	}
	return nil
}
