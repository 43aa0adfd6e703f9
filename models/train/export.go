package train

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolrl/toolrl/models/llama"
	"github.com/toolrl/toolrl/models/safetensors"
)

// LlamaConfig returns the model's Hugging Face config (tied embeddings,
// float32), with bos, eos and pad set to the given ids.
func (m *Model) LlamaConfig(bos, eos, pad int) llama.Config {
	c := m.Config
	return llama.Config{
		ModelType: "llama", Architectures: []string{"LlamaForCausalLM"},
		VocabSize: c.Vocab, HiddenSize: c.Dim, IntermediateSize: c.FF, NumHiddenLayers: c.Layers,
		NumAttentionHeads: c.Heads, NumKeyValueHeads: c.KVHeads, HeadDim: c.HeadDim(), HiddenAct: "silu",
		RMSNormEps: c.NormEps, RopeTheta: c.RopeTheta, MaxPositionEmbeddings: c.MaxPos,
		TieWordEmbeddings: true, InitializerRange: 0.02,
		BOSTokenID: llama.TokenIDs{bos}, EOSTokenID: llama.TokenIDs{eos}, PadTokenID: llama.TokenIDs{pad},
		TorchDType: "float32", UseCache: true,
	}
}

// LlamaWeights returns the weights under their HF names; the data aliases the model.
func (m *Model) LlamaWeights() llama.Weights {
	w := llama.Weights{}
	for _, p := range m.Params {
		w[p.Name] = llama.Tensor{Shape: append([]int(nil), p.Shape...), Data: p.W}
	}
	return w
}

// WriteHF writes config.json, model.safetensors (F32) and, unless skipONNX,
// model.onnx (weights inline, built by models/llama) into dir. The bytes
// depend only on the weights and ids.
func (m *Model) WriteHF(dir string, bos, eos, pad int, skipONNX bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write model %s: %w", dir, err)
	}
	cfg := m.LlamaConfig(bos, eos, pad)
	w := m.LlamaWeights()
	if err := w.Check(cfg); err != nil {
		return fmt.Errorf("write model %s: %w", dir, err)
	}
	cj, err := llama.MarshalConfig(cfg)
	if err != nil {
		return fmt.Errorf("write model %s: config: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cj, 0o644); err != nil {
		return fmt.Errorf("write model %s: %w", dir, err)
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), w.SafetensorsTensors(cfg), safetensors.F32, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("write model %s: %w", dir, err)
	}
	if skipONNX {
		return nil
	}
	if _, err := llama.WriteONNX(filepath.Join(dir, "model.onnx"), cfg, w, llama.ONNXOptions{External: llama.ExternalNever}); err != nil {
		return fmt.Errorf("write model %s: onnx: %w", dir, err)
	}
	return nil
}
