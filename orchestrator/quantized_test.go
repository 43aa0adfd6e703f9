package orchestrator

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolrl/toolrl/internal/tinymodel"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/setting"
)

// TestRolloutFromQuantizedPolicy (#19.2): an actor sampling with a quantized
// copy of the policy records the quantized policy's logprobs (the behaviour
// policy's): teacher-forced scoring of the same quantized file gives them
// back within 1e-4, and the trajectories name the quantization. Scored by
// the float32 file instead, they differ: the mismatch the learner's
// truncated importance sampling corrects.
func TestRolloutFromQuantizedPolicy(t *testing.T) {
	extra := tinyPolicyFiles(t)
	fp32 := tinymodel.Write(t, 7, extra)
	for _, q := range []llama.Quantization{{Bits: 8}, {Bits: 4, AccuracyLevel: 4}} {
		t.Run(q.String(), func(t *testing.T) {
			model := tinymodel.WriteQuantized(t, 7, q, extra)
			prompts := writePrompts(t, 2)
			for _, ref := range []string{model, fp32} {
				out := filepath.Join(t.TempDir(), "q.jsonl")
				job := tinyJob(model, prompts, out)
				job.RefModel = setting.Of(ref)
				if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
					t.Fatal(err)
				}
				var sum, worst float64
				n := 0
				for _, tr := range readTrajectories(t, out) {
					if tr.Model.Quantization != q.String() {
						t.Fatalf("%s: model ref %+v, want quantization %q", tr.ID, tr.Model, q.String())
					}
					for i, m := range tr.LossMask {
						if m == 0 {
							continue
						}
						d := math.Abs(float64(tr.Logprobs[i] - tr.RefLogprobs[i]))
						sum, worst, n = sum+d, max(worst, d), n+1
					}
				}
				if n == 0 {
					t.Fatal("no sampled tokens")
				}
				t.Logf("scored by %s: mean |Δlogprob| %.3g, max %.3g over %d tokens", filepath.Base(ref), sum/float64(n), worst, n)
				if ref == model && worst > 1e-4 {
					t.Fatalf("recorded logprobs differ from teacher-forced scoring of the same quantized file by up to %.3g > 1e-4", worst)
				}
				if ref == fp32 && worst < 1e-3 {
					t.Fatalf("float32 scoring within %.3g of the quantized policy's logprobs: was the quantized file sampled?", worst)
				}
			}
		})
	}
}

// TestHotReloadKeepsTheQuantizedForm (#19.3): an actor that started from a
// quantized model loads each new version's quantized form
// (policystore.QuantizedForm), so its trajectories record that copy's
// quantization, name and hash; a version published without the form is
// refused, naming it, and the loaded one keeps serving.
func TestHotReloadKeepsTheQuantizedForm(t *testing.T) {
	extra := tinyPolicyFiles(t)
	q := llama.Quantization{Bits: 8}
	model := tinymodel.WriteQuantized(t, 7, q, extra)
	storeDir := t.TempDir()
	store, err := policystore.Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// Version 1 in both forms, as a learner with a rollout quantization
	// publishes it.
	cfg, _ := llama.ShapeConfig("tiny")
	w, err := llama.RandomWeights(cfg, 101)
	if err != nil {
		t.Fatal(err)
	}
	float32Form := versionFolder(t, 101)
	v1, err := store.Publish(context.Background(), 1, nil, func(dir string) error {
		if err := float32Form(dir); err != nil {
			return err
		}
		_, err := llama.WriteFolder(filepath.Join(dir, policystore.QuantizedForm), llama.FolderSpec{Config: cfg, Weights: w, ExtraFiles: extra,
			ONNX: llama.ONNXOptions{Quantize: q}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewStorePolicySource(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	// Version 2, float32 only, appears after the second prompt.
	feed := &slowFeed{prompts: readPromptSet(t, 4), burst: 1, gap: 20 * time.Millisecond, before: func(i int) {
		if i == 2 {
			publishVersion(t, store, 2, nil)
			time.Sleep(2 * testPoll)
		}
	}}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	var logs lockedLog
	sum, err := loggedRun(context.Background(), tinyJob(model, "feed", out), RunOptions{Feed: feed, Policy: src, PolicyPoll: testPoll}, &logs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sum.VersionsLoaded, []int64{1}) || !slices.Equal(sum.VersionsRefused, []int64{2}) {
		t.Fatalf("loaded %v, refused %v; want [1], [2]", sum.VersionsLoaded, sum.VersionsRefused)
	}
	if len(logs.lines("refused policy version", "version=2", "has no quantized form")) != 1 {
		t.Error("no log line refusing version 2 for its missing quantized form")
	}
	hash, err := fileSHA256(filepath.Join(v1.Dir, policystore.QuantizedForm, "onnx", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	ts := readTrajectories(t, out)
	if len(ts) == 0 {
		t.Fatal("no trajectories")
	}
	for _, tr := range ts {
		if tr.PolicyVersion != 1 || tr.Model.Quantization != q.String() || tr.Model.Name != "v000001/quantized" || tr.Model.Hash != "sha256:"+hash {
			t.Fatalf("%s: version %d, model %+v; want version 1's quantized copy (sha256:%s)", tr.ID, tr.PolicyVersion, tr.Model, hash)
		}
	}
}
