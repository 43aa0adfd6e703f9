package learner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/model/train"
)

// LoadModel reads a Hugging Face model folder (config.json and
// model.safetensors) into a trainable float32 model. It refuses, naming the
// key, a folder model/train cannot represent (see TrainConfig) or one
// without a safetensors checkpoint.
func LoadModel(dir string) (*train.Model, llama.Config, error) { return loadModel[float32](dir) }

// LoadNet is LoadModel in the given precision (the checkpoint's float32
// weights, or bf16/f16 ones widened, converted to it).
func LoadNet(dir string, p train.Precision) (train.Net, llama.Config, error) {
	switch p {
	case train.Float32, "":
		return loadModel[float32](dir)
	case train.Float64:
		return loadModel[float64](dir)
	}
	return nil, llama.Config{}, fmt.Errorf("load model %s: precision %q: want %s or %s", dir, p, train.Float32, train.Float64)
}

func loadModel[F train.Float](dir string) (*train.ModelOf[F], llama.Config, error) {
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
	m, err := train.NewModelOf[F](tc, 0)
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
// or says which key the learner cannot train. It trains what model/llama
// builds: llama (attention_bias included), mistral without a sliding window,
// qwen2 (q/k/v biases), qwen3 (q/k norm, explicit head_dim) and their
// rope_scaling types; llama.Config.Validate refuses the rest, naming the key.
func TrainConfig(c llama.Config) (train.Config, error) {
	if err := c.Validate(); err != nil {
		return train.Config{}, err
	}
	if c.MaxPositionEmbeddings < 2 {
		return train.Config{}, fmt.Errorf("max_position_embeddings %d: want ≥ 2", c.MaxPositionEmbeddings)
	}
	fam, err := c.Family()
	if err != nil {
		return train.Config{}, err
	}
	tc := train.Config{
		Vocab: c.VocabSize, Dim: c.HiddenSize, Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads,
		KVHeads: c.KVHeads(), FF: c.IntermediateSize, MaxPos: c.MaxPositionEmbeddings,
		RopeTheta: c.Theta(), NormEps: c.RMSNormEps, UntiedHead: !c.TieWordEmbeddings,
		QKVBias: fam.QKVBias, OBias: fam.OBias, QKNorm: fam.QKNorm,
	}
	// The defaults stay zero values, so that a model built by NewModel from
	// a plain Config equals the one loaded back from its folder.
	if c.ModelType != "llama" {
		tc.ModelType = c.ModelType
	}
	if d := fam.HeadDim; d*c.NumAttentionHeads != c.HiddenSize {
		tc.HeadDim = d
	}
	if rs := strings.TrimSpace(string(c.RopeScaling)); rs != "" && rs != "null" {
		// Compact, so that the config.json a published version writes
		// (indented) maps to the same train.Config as its base.
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(rs)); err != nil {
			return train.Config{}, fmt.Errorf("rope_scaling: %w", err)
		}
		tc.RopeScaling = b.String()
	}
	if err := tc.Validate(); err != nil {
		return train.Config{}, err
	}
	return tc, nil
}

// Models are the networks a learner run starts from.
type Models struct {
	// Policy is the trainable policy of the start version, Base the files
	// every published version copies from its folder.
	Policy train.Net
	Base   Base
	// Ref is the frozen reference policy of the KL term (nil: none).
	Ref train.Net
}

// LoadModels reads the policy folder dir in precision p, its published
// files, and the reference policy a run needs: refDir when given, else dir
// itself when klBeta > 0 (the KL term then compares against the start
// version), else none. An error reading the reference starts with
// "--ref-model: ", the flag of Spec.RefModel.
func LoadModels(dir, refDir string, klBeta float64, p train.Precision) (Models, error) {
	policy, cfg, err := LoadNet(dir, p)
	if err != nil {
		return Models{}, err
	}
	base, err := ReadBase(dir, cfg)
	if err != nil {
		return Models{}, err
	}
	m := Models{Policy: policy, Base: base}
	if refDir == "" && klBeta > 0 {
		refDir = dir
	}
	if refDir != "" {
		if m.Ref, _, err = LoadNet(refDir, p); err != nil {
			return Models{}, fmt.Errorf("--ref-model: %w", err)
		}
	}
	return m, nil
}
