package learner

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/model/train"
)

// LoadModel reads a Hugging Face model folder (config.json and
// model.safetensors) into a trainable model. It refuses, naming the feature,
// a folder model/train cannot represent: a model type other than llama,
// attention or MLP biases, scaled RoPE, a head_dim other than
// hidden_size/num_attention_heads, or no safetensors checkpoint.
func LoadModel(dir string) (*train.Model, llama.Config, error) {
	cfg, err := llama.LoadConfig(dir)
	if err != nil {
		return nil, llama.Config{}, fmt.Errorf("load model %s: %w", dir, err)
	}
	tc, err := TrainConfig(cfg)
	if err != nil {
		return nil, llama.Config{}, fmt.Errorf("load model %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err != nil {
		if _, ierr := os.Stat(filepath.Join(dir, "model.safetensors.index.json")); ierr != nil {
			return nil, llama.Config{}, fmt.Errorf("load model %s: no model.safetensors: the learner reads weights from safetensors (build the folder with `toolrl model build ... --safetensors`)", dir)
		}
	}
	w, err := llama.LoadSafetensors(dir, cfg)
	if err != nil {
		return nil, llama.Config{}, fmt.Errorf("load model %s: %w", dir, err)
	}
	m, err := train.NewModel(tc, 0)
	if err != nil {
		return nil, llama.Config{}, fmt.Errorf("load model %s: %w", dir, err)
	}
	flat := make(map[string][]float32, len(w))
	for name, t := range w {
		flat[name] = t.Data
	}
	if err := m.SetWeights(flat); err != nil {
		return nil, llama.Config{}, fmt.Errorf("load model %s: %w", dir, err)
	}
	return m, cfg, nil
}

// TrainConfig maps a Hugging Face config onto model/train's architecture,
// or says which feature the learner cannot train.
func TrainConfig(c llama.Config) (train.Config, error) {
	if err := c.Validate(); err != nil {
		return train.Config{}, err
	}
	switch {
	case c.ModelType != "llama":
		return train.Config{}, fmt.Errorf("model_type %q: the learner trains llama models only (qwen2 needs q/k/v biases, mistral sliding windows)", c.ModelType)
	case c.AttentionBias:
		return train.Config{}, fmt.Errorf("attention_bias=true: the learner's Llama has no projection biases")
	case c.HeadDimension()*c.NumAttentionHeads != c.HiddenSize:
		return train.Config{}, fmt.Errorf("head_dim %d × %d heads ≠ hidden_size %d: the learner needs head_dim = hidden_size/num_attention_heads", c.HeadDimension(), c.NumAttentionHeads, c.HiddenSize)
	case c.MaxPositionEmbeddings < 2:
		return train.Config{}, fmt.Errorf("max_position_embeddings %d: want ≥ 2", c.MaxPositionEmbeddings)
	}
	tc := train.Config{
		Vocab: c.VocabSize, Dim: c.HiddenSize, Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads,
		KVHeads: c.KVHeads(), FF: c.IntermediateSize, MaxPos: c.MaxPositionEmbeddings,
		RopeTheta: c.Theta(), NormEps: c.RMSNormEps, UntiedHead: !c.TieWordEmbeddings,
	}
	return tc, tc.Validate()
}
