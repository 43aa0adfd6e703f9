package calceval

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/trainer"
)

// TestTableIntervalsOverPrompts: the accuracy and call-rate rows are
// followed by their 95% intervals over prompts (here curves'
// TestClusterRobustByHand numbers, and a call rate without variation
// between prompts: Wilson over the 4 prompts); figures without counts per
// prompt say their interval is Wilson's over samples.
func TestTableIntervalsOverPrompts(t *testing.T) {
	st := trainer.RolloutStats{Trajectories: 20, Accuracy: 0.6, CallRate: 0.5,
		PerPrompt: &trainer.PromptCounts{Samples: []int{2, 4, 4, 10}, Correct: []int{1, 4, 0, 7}, WithCall: []int{1, 2, 2, 5}, Calls: []int{1, 2, 2, 5}}}
	var b bytes.Buffer
	if err := WriteTable(&b, &orchestrator.Job{}, trainer.EvalMetrics{Overall: st}, nil, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for i, want := range map[int]string{3: "accuracy", 4: "95% interval over prompts (CR1)   25.4–94.6%", 5: "call rate", 6: "95% interval over prompts (CR1)   15.0–85.0%"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d %q, want %q\n%s", i, lines[i], want, b.String())
		}
	}
	old := st
	old.PerPrompt = nil
	b.Reset()
	if err := WriteTable(&b, &orchestrator.Job{}, trainer.EvalMetrics{Overall: old}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "(over samples (Wilson))") {
		t.Errorf("table of figures without counts per prompt does not name Wilson:\n%s", b.String())
	}
}
