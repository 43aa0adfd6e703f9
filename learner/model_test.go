package learner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/model/train"
)

// TestTrainConfigNamesWhatItCannotTrain: the tiny shape maps (GQA, untied
// head); a rope_scaling the builder does not build is refused with its key
// and the supported list (the families and the other refusals:
// family_test.go).
func TestTrainConfigNamesWhatItCannotTrain(t *testing.T) {
	tiny, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	if tc, err := TrainConfig(tiny); err != nil || !tc.UntiedHead || tc.KVHeads != 2 {
		t.Fatalf("tiny: %+v, %v", tc, err)
	}
	scaled := tiny
	scaled.RopeScaling = []byte(`{"type":"su","factor":2}`)
	if _, err := TrainConfig(scaled); err == nil || !strings.Contains(err.Error(), "rope_scaling.type") || !strings.Contains(err.Error(), "yarn") {
		t.Errorf("error %v, want one naming rope_scaling.type and the supported types", err)
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

// TestLoadModelsReference: the reference is --ref-model when given, the
// policy folder when only KLBeta needs one, else none; a reference that does
// not load is named as --ref-model.
func TestLoadModelsReference(t *testing.T) {
	cfg, _ := llama.ShapeConfig("tiny")
	w, err := llama.RandomWeights(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "m")
	if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w, Safetensors: true}); err != nil {
		t.Fatal(err)
	}
	m, err := LoadModels(dir, "", 0, train.Float32)
	if err != nil {
		t.Fatal(err)
	}
	if m.Policy == nil || m.Ref != nil || m.Base.Dir != dir || m.Base.Config.HiddenSize != cfg.HiddenSize {
		t.Fatalf("no KL, no --ref-model: %+v", m)
	}
	if m, err = LoadModels(dir, "", 0.1, train.Float32); err != nil || m.Ref == nil {
		t.Fatalf("KL without --ref-model: ref %v, %v; want the policy folder", m.Ref, err)
	}
	missing := filepath.Join(t.TempDir(), "none")
	if _, err := LoadModels(dir, missing, 0, train.Float32); err == nil || !strings.HasPrefix(err.Error(), "--ref-model: load model "+missing) {
		t.Fatalf("missing reference: %v", err)
	}
	if _, err := LoadModels(missing, "", 0.1, train.Float32); err == nil || !strings.HasPrefix(err.Error(), "load model "+missing) {
		t.Fatalf("missing policy: %v", err)
	}
}
