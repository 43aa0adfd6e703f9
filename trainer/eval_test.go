package trainer

import (
	"math"
	"slices"
	"testing"

	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/traj"
)

// TestInPromptOrder: groups come back in the order of their prompts,
// whatever order the sink received them in; a group of an unknown prompt
// goes last.
func TestInPromptOrder(t *testing.T) {
	prompts := []prompt.Prompt{{ID: "c"}, {ID: "a"}, {ID: "b"}}
	groups := []traj.Group{{PromptID: "b"}, {PromptID: "x"}, {PromptID: "a"}, {PromptID: "c"}}
	var got []string
	for _, g := range inPromptOrder(groups, prompts) {
		got = append(got, g.PromptID)
	}
	if want := []string{"c", "a", "b", "x"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if groups[0].PromptID != "b" {
		t.Error("inPromptOrder reordered its argument")
	}
}

// checkPromptCounts checks an evaluation's counts per prompt against its
// figures: one entry per group, overall and in every split, summing to the
// trajectories, right answers, trajectories with a call and calls the
// rates were computed from; each split's prompts add up to all of them.
func checkPromptCounts(t *testing.T, e EvalMetrics) {
	t.Helper()
	check := func(name string, s RolloutStats) {
		pc := s.PerPrompt
		if pc == nil {
			t.Errorf("v%d %s: no per_prompt counts", e.PolicyVersion, name)
			return
		}
		n := float64(s.Trajectories)
		for _, c := range []struct {
			what  string
			col   []int
			total float64
		}{
			{"samples", pc.Samples, n}, {"correct", pc.Correct, s.Accuracy * n},
			{"with_call", pc.WithCall, s.CallRate * n}, {"calls", pc.Calls, s.CallsPerTrajectory * n},
		} {
			sum := 0
			for _, x := range c.col {
				sum += x
			}
			if len(c.col) != s.Groups || math.Abs(float64(sum)-c.total) > 1e-6 {
				t.Errorf("v%d %s: %s has %d entries summing to %d; want %d entries summing to %g", e.PolicyVersion, name, c.what, len(c.col), sum, s.Groups, c.total)
			}
		}
	}
	check("overall", e.Overall)
	for field, values := range e.Split {
		groups := 0
		for v, s := range values {
			check(field+"="+v, s)
			groups += s.Groups
		}
		if groups != e.Overall.Groups {
			t.Errorf("v%d split %s: %d groups, overall %d", e.PolicyVersion, field, groups, e.Overall.Groups)
		}
	}
}
