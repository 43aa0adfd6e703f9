package curves

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/trainer"
)

// TestWilson checks the interval against values of the formula computed by
// hand (they agree with statsmodels' proportion_confint(method="wilson")).
func TestWilson(t *testing.T) {
	for _, c := range []struct {
		p      float64
		n      int
		lo, hi float64
	}{
		{0.5, 100, 0.4038, 0.5962},
		{0, 10, 0, 0.2775},
		{1, 10, 0.7225, 1},
	} {
		lo, hi := Wilson(c.p, c.n)
		if math.Abs(lo-c.lo) > 5e-4 || math.Abs(hi-c.hi) > 5e-4 {
			t.Errorf("Wilson(%g, %d) = [%.4f, %.4f], want [%.4f, %.4f]", c.p, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

func TestWriteTable(t *testing.T) {
	ev := func(k int, acc float64) trainer.EvalMetrics {
		return trainer.EvalMetrics{Iteration: k, PolicyVersion: int64(k), Overall: trainer.RolloutStats{Trajectories: 100, Accuracy: acc, CallRate: 0.5},
			Split: map[string]map[string]trainer.RolloutStats{"difficulty": {"easy": {Trajectories: 40, Accuracy: acc}, "hard": {Trajectories: 60, Accuracy: acc}}}}
	}
	// Run c's eval.jsonl has counts per prompt (TestClusterRobustByHand's).
	counted := trainer.EvalMetrics{Overall: trainer.RolloutStats{Trajectories: 20, Accuracy: 0.6, CallRate: 0.5,
		PerPrompt: &trainer.PromptCounts{Samples: []int{2, 4, 4, 10}, Correct: []int{1, 4, 0, 7}, WithCall: []int{1, 2, 2, 5}, Calls: []int{1, 2, 2, 5}}}}
	runs := []Run{{Label: "a", Evals: []trainer.EvalMetrics{ev(0, 0.5), ev(5, 0.7), ev(10, 0.9)}}, {Label: "b"}, {Label: "c", Evals: []trainer.EvalMetrics{counted}}}
	var b bytes.Buffer
	if err := WriteTable(&b, runs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| a | v0 (0) | all | 100 | 50.0% [40.4, 59.6]", "| a | v10 (10) | difficulty=hard | 60 | 90.0%", "| b | (no evaluation)",
		"| 0.0% | over samples (Wilson) |\n", "| c | v0 (0) | all | 20 | 60.0% [25.4, 94.6] | 50.0% [15.0, 85.0] |", "| over 4 prompts (CR1) |\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "v5 (5)") {
		t.Errorf("table shows an intermediate evaluation:\n%s", out)
	}
}
