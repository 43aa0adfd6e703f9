package orchestrator

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/tinymodel"
	"github.com/toolrl/toolrl/model/llama"
)

// TestRolloutFromQuantizedPolicy (#19.2): an actor sampling with a quantized
// copy of the policy records the quantized policy's logprobs (the behaviour
// policy's): teacher-forced scoring of the same quantized file gives them
// back within 1e-4, and the trajectories name the quantization. Scored by
// the float32 file instead, they differ: the mismatch the learner's
// truncated importance sampling corrects.
func TestRolloutFromQuantizedPolicy(t *testing.T) {
	calc, err := os.ReadFile(filepath.Join(testsupport.RepoRoot(t), "tools", "testdata", "calc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	extra := map[string][]byte{
		"prompt_format.json": []byte(`{"kind":"plain","template":"Question: {prompt}\nAnswer:","tool_call_format":"bracket"}`),
		"tools.yaml":         calc,
	}
	fp32 := tinymodel.Write(t, 7, extra)
	for _, q := range []llama.Quantization{{Bits: 8}, {Bits: 4, AccuracyLevel: 4}} {
		t.Run(q.String(), func(t *testing.T) {
			model := tinymodel.WriteQuantized(t, 7, q, extra)
			prompts := writePrompts(t, 2)
			for _, ref := range []string{model, fp32} {
				out := filepath.Join(t.TempDir(), "q.jsonl")
				job := tinyJob(model, prompts, out)
				job.RefModel = ref
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
