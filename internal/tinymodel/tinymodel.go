// Package tinymodel writes the tiny random Llama that tests across toolrl run
// through ONNX Runtime: the "tiny" shape of model/llama (2 layers, hidden
// 64, vocab 320) with seeded random weights, as a Hugging Face folder.
package tinymodel

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/model/llama"
)

// Write writes the tiny model with weights from seed, plus extra files (name
// to contents, e.g. prompt_format.json), into a new folder under
// t.TempDir() and returns the folder. Without ONNX Runtime the test skips
// (fails when CI=true): the model is only useful with it.
func Write(t testing.TB, seed uint64, extra map[string][]byte) string {
	t.Helper()
	return WriteQuantized(t, seed, llama.Quantization{}, extra)
}

// WriteQuantized is Write with the ONNX graph's weights quantized as q says
// (float32 for the zero value); the folder is named "tiny-" + q.String()
// then, so that two variants can sit in one test.
func WriteQuantized(t testing.TB, seed uint64, q llama.Quantization, extra map[string][]byte) string {
	t.Helper()
	testsupport.RequireORT(t)
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	w, err := llama.RandomWeights(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	name := "tiny"
	if q.Enabled() {
		name += "-" + q.String()
	}
	dir := filepath.Join(t.TempDir(), name)
	if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w, ExtraFiles: extra, ONNX: llama.ONNXOptions{Quantize: q}}); err != nil {
		t.Fatalf("write the tiny model: %v", err)
	}
	return dir
}

// SetGenerationConfig adds keys (do_sample, temperature, top_k, ...) to the
// generation_config.json of the model folder dir, keeping the keys it has
// (the EOS ids), so a test can give the folder sampling defaults.
func SetGenerationConfig(t testing.TB, dir string, keys map[string]any) {
	t.Helper()
	path := filepath.Join(dir, "generation_config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	maps.Copy(cfg, keys)
	if b, err = json.MarshalIndent(cfg, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
