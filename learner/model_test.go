package learner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/model/llama"
)

// TestTrainConfigNamesWhatItCannotTrain: every folder feature model/train
// lacks is refused with its name; the shipped shapes it can train map.
func TestTrainConfigNamesWhatItCannotTrain(t *testing.T) {
	tiny, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	if tc, err := TrainConfig(tiny); err != nil || !tc.UntiedHead || tc.KVHeads != 2 {
		t.Fatalf("tiny: %+v, %v", tc, err)
	}
	qwen, _ := llama.ShapeConfig("qwen2.5-0.5b")
	bias := tiny
	bias.AttentionBias = true
	headDim := tiny
	headDim.HeadDim = 32
	scaled := tiny
	scaled.RopeScaling = []byte(`{"type":"linear","factor":2}`)
	for name, c := range map[string]struct {
		cfg  llama.Config
		want string
	}{
		"qwen2":    {qwen, "model_type"},
		"bias":     {bias, "attention_bias"},
		"head_dim": {headDim, "head_dim"},
		"rope":     {scaled, "rope_scaling"},
	} {
		_, err := TrainConfig(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", name, err, c.want)
		}
	}
}

func TestLoadModelWithoutSafetensors(t *testing.T) {
	cfg, _ := llama.ShapeConfig("tiny")
	w, err := llama.RandomWeights(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "m")
	if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadModel(dir); err == nil || !strings.Contains(err.Error(), "model.safetensors") {
		t.Fatalf("error %v, want one naming model.safetensors", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w, Safetensors: true}); err != nil {
		t.Fatal(err)
	}
	m, _, err := LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Weights()["lm_head.weight"]; len(got) != len(w["lm_head.weight"].Data) || got[7] != w["lm_head.weight"].Data[7] {
		t.Fatal("untied head not loaded from the checkpoint")
	}
}
