package train

import (
	"fmt"

	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/model/safetensors"
)

// LlamaConfig returns the model's Hugging Face config (float32), with bos, eos and pad set to the given ids.
func (m *Model) LlamaConfig(bos, eos, pad int) llama.Config {
	c := m.Config
	return llama.Config{
		ModelType: "llama", Architectures: []string{"LlamaForCausalLM"},
		VocabSize: c.Vocab, HiddenSize: c.Dim, IntermediateSize: c.FF, NumHiddenLayers: c.Layers,
		NumAttentionHeads: c.Heads, NumKeyValueHeads: c.KVHeads, HeadDim: c.HeadDim(), HiddenAct: "silu",
		RMSNormEps: c.NormEps, RopeTheta: c.RopeTheta, MaxPositionEmbeddings: c.MaxPos,
		TieWordEmbeddings: !c.UntiedHead, InitializerRange: 0.02,
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
func (m *Model) WriteFolder(dir string, bos, eos, pad int, files FolderFiles) error {
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
