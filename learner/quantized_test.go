package learner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/policystore"
)

// TestPublishQuantizedForm: with a rollout quantization every published
// version holds both forms, the float32 folder and the quantized copy in
// policystore.QuantizedForm (whose config records the quantization), and the
// manifest covers both (Verify fails when the quantized ONNX is altered). A
// learner resuming the version reads the float32 weights bit for bit, not the
// quantized copy's (which differ: the round trip is lossy).
func TestPublishQuantizedForm(t *testing.T) {
	ctx := context.Background()
	l, base := freshLearner(t, writeTinyBase(t))
	base.RolloutQuantization = llama.Quantization{Bits: 8, BlockSize: 32, AccuracyLevel: 4}
	// A step off the base weights, so the resumed weights say which version they are.
	for _, p := range l.Model().(*train.Model).Params {
		for i := range p.W {
			p.W[i] += 1e-3 * float32(i%7)
		}
	}
	store, err := policystore.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	v, err := l.Publish(ctx, store, base, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := policystore.Verify(ctx, v); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range v.Manifest.Files {
		paths = append(paths, f.Path)
	}
	for _, want := range []string{"model.safetensors", "onnx/model.onnx", StateFile, "quantized/config.json", "quantized/onnx/model.onnx", "quantized/tokenizer.json"} {
		if !slices.Contains(paths, want) {
			t.Errorf("manifest lacks %s: %v", want, paths)
		}
	}
	if slices.Contains(paths, "quantized/model.safetensors") {
		t.Error("the quantized copy carries a safetensors checkpoint; the learner never reads it")
	}
	st, err := ReadState(v)
	if err != nil || st.RolloutQuantization != "int8-b32-acc4" {
		t.Fatalf("state %+v, %v: want rollout_quantization int8-b32-acc4", st, err)
	}
	qcfg, err := llama.LoadConfig(filepath.Join(v.Dir, policystore.QuantizedForm))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := qcfg.Extra[llama.QuantizationKey]; !ok {
		t.Fatalf("quantized/config.json has no %s", llama.QuantizationKey)
	}
	if cfg, _ := llama.LoadConfig(v.Dir); cfg.Extra[llama.QuantizationKey] != nil {
		t.Fatal("the float32 folder's config.json records a quantization")
	}

	want := l.Model().(*train.Model).Weights()
	resumed, _ := freshLearner(t, base.Dir)
	if _, err := resumed.Resume(v); err != nil {
		t.Fatal(err)
	}
	got := resumed.Model().(*train.Model).Weights()
	dq, err := llama.DequantizedWeights(base.Config, l.Model().LlamaWeights(), base.RolloutQuantization)
	if err != nil {
		t.Fatal(err)
	}
	name := "model.layers.0.self_attn.q_proj.weight"
	for n, w := range want {
		if !slices.Equal(got[n], w) {
			t.Fatalf("resumed %s differs from the published float32 weights", n)
		}
	}
	if len(want[name]) == 0 || slices.Equal(dq[name].Data, want[name]) {
		t.Fatalf("%s: the quantized round trip equals the float32 weights; the test cannot tell the forms apart", name)
	}

	// The manifest covers the quantized copy.
	onnx := filepath.Join(v.Dir, policystore.QuantizedForm, "onnx", "model.onnx")
	data, err := os.ReadFile(onnx)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 1
	if err := os.WriteFile(onnx, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := policystore.Verify(ctx, v); err == nil {
		t.Fatal("Verify accepted an altered quantized/onnx/model.onnx")
	}
}

// TestWriteQuantizedNeedsAQuantization: WriteQuantized without a rollout
// quantization is an error naming the folder, not a float32 copy.
func TestWriteQuantizedNeedsAQuantization(t *testing.T) {
	l, base := freshLearner(t, writeTinyBase(t))
	dir := filepath.Join(t.TempDir(), "q")
	if err := l.WriteQuantized(dir, base); err == nil {
		t.Fatal("WriteQuantized without a quantization succeeded")
	}
}
