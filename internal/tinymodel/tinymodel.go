// Package tinymodel writes the tiny random models that tests across toolrl
// run through ONNX Runtime: the "tiny" shape of model/llama (2 layers, hidden
// 64, vocab 320) and the tiny family shapes (FamilyShapes) with seeded random
// weights, as Hugging Face folders.
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
	return WriteShapeQuantized(t, "tiny", seed, q, extra)
}

// FamilyShapes names one tiny shape per supported family, each keeping the
// features of the real config it is named after (see llama.ShapeConfig):
// plain llama, Qwen2.5 (q/k/v biases, tied), Qwen3 (q/k norm, explicit
// head_dim), Llama-3.2 (llama3 rope scaling, eos list).
var FamilyShapes = []string{"tiny", "tiny-qwen2.5", "tiny-qwen3", "tiny-llama3.2"}

// WriteShape is Write for the named llama shape (one of FamilyShapes, or
// any llama.ShapeNames entry); the folder is named after the shape.
func WriteShape(t testing.TB, shape string, seed uint64, extra map[string][]byte) string {
	t.Helper()
	return WriteShapeQuantized(t, shape, seed, llama.Quantization{}, extra)
}

// WriteShapeQuantized is WriteShape with the graph quantized as q says; the
// folder is named shape + "-" + q.String() then.
func WriteShapeQuantized(t testing.TB, shape string, seed uint64, q llama.Quantization, extra map[string][]byte) string {
	t.Helper()
	testsupport.RequireORT(t)
	cfg, err := llama.ShapeConfig(shape)
	if err != nil {
		t.Fatal(err)
	}
	w, err := llama.RandomWeights(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	name := shape
	if q.Enabled() {
		name += "-" + q.String()
	}
	dir := filepath.Join(t.TempDir(), name)
	if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w, ExtraFiles: extra, ONNX: llama.ONNXOptions{Quantize: q}}); err != nil {
		t.Fatalf("write the %s model: %v", shape, err)
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
