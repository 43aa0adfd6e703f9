package trainer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/setting"
)

// quantizedConfig is smallConfig without evaluation, for iterations
// iterations, with int8 rollouts (block 32, accuracy level 4) and TIS.
func quantizedConfig(t *testing.T, out string, iterations int) Config {
	c := smallConfig(t, out, false)
	c.Iterations, c.Eval = setting.Of(iterations), EvalConfig{}
	c.Learner.TISCap = setting.Of(2.0)
	c.RolloutQuantization = &QuantizationConfig{Bits: setting.Of(8), BlockSize: setting.Of(32), AccuracyLevel: setting.Of(4)}
	return c
}

// onnxHash is the hash a trajectory records for the ONNX model in dir
// (onnx/model.onnx; the calc model has no external data).
func onnxHash(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "onnx", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(h[:])
}

// TestTrainQuantizedRollouts: two iterations of the embedded loop with int8
// rollouts. Each published version holds both forms and verifies; iteration
// 1 samples version 0's quantized copy (OUT/base/quantized), iteration 2
// version 1's (v000001/quantized): its trajectories record the quantization
// and that copy's hash, not the float32 graph's. The learner trains float32
// weights on the quantized behaviour logprobs, so metrics.jsonl shows a
// rollout mismatch far above a float32 run's (ORT vs the Go learner, ~1e-6).
// A resumed run continues from version 2's float32 folder and samples its
// quantized copy.
func TestTrainQuantizedRollouts(t *testing.T) {
	testsupport.RequireORT(t)
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "q")
	res, err := Train(ctx, quantizedConfig(t, out, 2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 2 {
		t.Fatalf("result %+v", res)
	}
	store, err := policystore.OpenReadOnly(filepath.Join(out, PolicyDir))
	if err != nil {
		t.Fatal(err)
	}
	for n := int64(1); n <= 2; n++ {
		v, err := store.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := policystore.Verify(ctx, v); err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, f := range v.Manifest.Files {
			listed[f.Path] = true
		}
		if !listed["model.safetensors"] || !listed["onnx/model.onnx"] || !listed["quantized/onnx/model.onnx"] || !listed["quantized/config.json"] {
			t.Fatalf("version %d: manifest lacks a form: %v", n, v.Manifest.Files)
		}
		if st, err := learner.ReadState(v); err != nil || st.RolloutQuantization != "int8-b32-acc4" {
			t.Fatalf("version %d: state %+v, %v", n, st, err)
		}
	}
	v1, _ := store.Get(1)
	want := map[int]struct{ name, hash string }{
		1: {"base/quantized", onnxHash(t, filepath.Join(out, BaseQuantizedDir))},
		2: {"v000001/quantized", onnxHash(t, filepath.Join(v1.Dir, policystore.QuantizedForm))},
	}
	if want[2].hash == onnxHash(t, v1.Dir) {
		t.Fatal("version 1's quantized and float32 graphs hash the same")
	}
	r, err := export.OpenTrajectories(filepath.Join(out, TrajectoriesFile))
	n := 0
	for _, tr := range trajtest.ReadAll(t, r, err) {
		n++
		w := want[tr.Iteration]
		if tr.Model.Quantization != "int8-b32-acc4" || tr.Model.Name != w.name || tr.Model.Hash != w.hash {
			t.Fatalf("iteration %d (policy version %d): model %+v, want %s %s int8-b32-acc4", tr.Iteration, tr.PolicyVersion, tr.Model, w.name, w.hash)
		}
	}
	if n != 2*8*4 {
		t.Fatalf("%d trajectories, want 64", n)
	}
	ms := testsupport.ReadJSONLines[IterationMetrics](t, filepath.Join(out, MetricsFile))
	for _, m := range ms {
		if m.Learner.Mismatch.MeanAbs < 1e-5 || m.Learner.Mismatch.K3 <= 0 {
			t.Errorf("iteration %d: rollout_mismatch %+v: want the int8 gap (mean |Δ| ≥ 1e-5)", m.Iteration, m.Learner.Mismatch)
		}
	}

	// Float32 rollouts of the same iteration: the mismatch is ORT's against
	// the learner's arithmetic only.
	fout := filepath.Join(t.TempDir(), "f")
	fcfg := quantizedConfig(t, fout, 1)
	fcfg.RolloutQuantization = nil
	if _, err := Train(ctx, fcfg, Options{}); err != nil {
		t.Fatal(err)
	}
	fm := testsupport.ReadJSONLines[IterationMetrics](t, filepath.Join(fout, MetricsFile))[0]
	t.Logf("rollout_mismatch: int8 %+v, float32 %+v", ms[0].Learner.Mismatch, fm.Learner.Mismatch)
	if fm.Learner.Mismatch.MeanAbs*10 > ms[0].Learner.Mismatch.MeanAbs {
		t.Errorf("float32 mean |Δ| %g is not an order below int8's %g", fm.Learner.Mismatch.MeanAbs, ms[0].Learner.Mismatch.MeanAbs)
	}

	// Resume: iteration 3 trains from version 2's float32 folder and
	// samples its quantized copy.
	cfg := quantizedConfig(t, out, 3)
	res, err = Train(ctx, cfg, Options{Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstIteration != 3 || res.Version != 3 {
		t.Fatalf("resumed result %+v", res)
	}
	v2, _ := store.Get(2)
	r, err = export.OpenTrajectories(filepath.Join(out, TrajectoriesFile))
	for _, tr := range trajtest.ReadAll(t, r, err) {
		if tr.Iteration == 3 && (tr.Model.Name != "v000002/quantized" || tr.Model.Hash != onnxHash(t, filepath.Join(v2.Dir, policystore.QuantizedForm))) {
			t.Fatalf("resumed iteration 3: model %+v, want v000002's quantized copy", tr.Model)
		}
	}
}

// TestTrainResumeNeedsTheQuantizedForm: a run asking for quantized
// rollouts refuses to resume a store whose versions have no quantized copy,
// naming the version folder and the missing form.
func TestTrainResumeNeedsTheQuantizedForm(t *testing.T) {
	testsupport.RequireORT(t)
	out := filepath.Join(t.TempDir(), "f")
	cfg := quantizedConfig(t, out, 1)
	cfg.RolloutQuantization = nil
	if _, err := Train(context.Background(), cfg, Options{}); err != nil {
		t.Fatal(err)
	}
	_, err := Train(context.Background(), quantizedConfig(t, out, 2), Options{Resume: true})
	if err == nil || !strings.Contains(err.Error(), "v000001 has no quantized form") {
		t.Fatalf("error %v, want one naming v000001 and its missing quantized form", err)
	}
}
