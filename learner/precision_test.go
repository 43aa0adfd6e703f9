package learner

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/policystore"
)

// precisionLearner is a learner on the model folder dir in precision p.
func precisionLearner(t *testing.T, dir string, p train.Precision) *Learner {
	t.Helper()
	m, _, err := LoadNet(dir, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Precision() != p {
		t.Fatalf("LoadNet(%s) gave a %s model", p, m.Precision())
	}
	opts := DefaultOptions()
	opts.LR, opts.MaxStaleness = 1e-3, -1
	l, err := New(m, nil, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestFloat64Learner: a float64 learner trains the batch a float32 one does
// to float32 rounding (metrics within 1e-4 relative, not equal), publishes
// float32 weights and moments and continues from exactly those, so that a
// learner resumed from the version (in float64, or float32) starts where it
// is: the resumed float64 learner's next update equals the running one's bit
// for bit (fails if Publish does not round the running learner to what it
// wrote).
func TestFloat64Learner(t *testing.T) {
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	w, err := llama.RandomWeights(cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "base")
	if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w, Safetensors: true}); err != nil {
		t.Fatal(err)
	}
	m32, _, err := LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	adv := func(i int) float32 { return float32(i%3) - 1 }
	recs := onPolicyRecords(t, m32, 8, 1.3, adv)
	more := onPolicyRecords(t, m32, 6, 0.8, adv)
	base, err := ReadBase(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	l32, l64 := precisionLearner(t, dir, train.Float32), precisionLearner(t, dir, train.Float64)
	met32, err := l32.Update(ctx, recs)
	if err != nil {
		t.Fatal(err)
	}
	met64, err := l64.Update(ctx, recs)
	if err != nil {
		t.Fatal(err)
	}
	rel := func(a, b float64) float64 { return math.Abs(a-b) / math.Abs(b) }
	if rel(met32.Loss, met64.Loss) > 1e-4 || rel(met32.GradNorm, met64.GradNorm) > 1e-4 || met32.GradNorm == met64.GradNorm {
		t.Fatalf("float32 learner loss %.10g grad_norm %.10g, float64 %.10g %.10g", met32.Loss, met32.GradNorm, met64.Loss, met64.GradNorm)
	}
	t.Logf("float32 vs float64 learner: loss rel %.2g, grad_norm rel %.2g", rel(met32.Loss, met64.Loss), rel(met32.GradNorm, met64.GradNorm))

	store, err := policystore.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	v, err := l64.Publish(ctx, store, base, nil, len(recs))
	if err != nil {
		t.Fatal(err)
	}
	st, err := ReadState(v)
	if err != nil {
		t.Fatal(err)
	}
	if st.Precision != "float64" {
		t.Fatalf("state precision %q, want float64", st.Precision)
	}
	pub, _, err := LoadModel(v.Dir)
	if err != nil {
		t.Fatal(err)
	}
	running := l64.Model().(*train.Model64)
	for k, p := range pub.Params {
		for i, x := range p.W {
			if float64(x) != running.Params[k].W[i] {
				t.Fatalf("%s[%d]: published %v, the learner continues from %v", p.Name, i, x, running.Params[k].W[i])
			}
		}
	}

	r64 := precisionLearner(t, dir, train.Float64)
	if _, err := r64.Resume(v); err != nil {
		t.Fatal(err)
	}
	r32 := precisionLearner(t, dir, train.Float32)
	if _, err := r32.Resume(v); err != nil {
		t.Fatalf("float32 learner resuming a float64 learner's version: %v", err)
	}
	for k, p := range r32.Model().(*train.Model).Params {
		for i, x := range p.V {
			if float64(x) != running.Params[k].V[i] {
				t.Fatalf("%s[%d]: resumed second moment %v, the learner's %v", p.Name, i, x, running.Params[k].V[i])
			}
		}
	}
	next, err := l64.Update(ctx, more)
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := r64.Update(ctx, more)
	if err != nil {
		t.Fatal(err)
	}
	if next.Loss != resumed.Loss || next.GradNorm != resumed.GradNorm || next.Entropy != resumed.Entropy {
		t.Fatalf("after the version: running learner loss %.17g grad_norm %.17g, resumed %.17g %.17g",
			next.Loss, next.GradNorm, resumed.Loss, resumed.GradNorm)
	}
	got := r64.Model().(*train.Model64).Params
	for k, p := range running.Params {
		for i, x := range p.W {
			if got[k].W[i] != x {
				t.Fatalf("%s[%d]: resumed learner %v after an update, running %v", p.Name, i, got[k].W[i], x)
			}
		}
	}
}

// TestNewRefusesNilModel: a nil *train.Model is no model, and a nil one as
// the reference is no reference.
func TestNewRefusesNilModel(t *testing.T) {
	var none *train.Model
	if _, err := New(none, nil, 0, DefaultOptions()); err == nil {
		t.Fatal("New took a nil model")
	}
	m, err := train.NewModel(train.Config{Vocab: 5, Dim: 4, Layers: 1, Heads: 1, KVHeads: 1, FF: 4, MaxPos: 4, RopeTheta: 1e4, NormEps: 1e-5}, 1)
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(m, none, 0, DefaultOptions())
	if err != nil || l.ref != nil {
		t.Fatalf("New with a nil *train.Model reference: %v, ref %v", err, l.ref)
	}
}
