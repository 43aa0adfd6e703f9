package tools

import (
	"math"
	"testing"

	"github.com/toolrl/toolrl/traj"
)

func TestComputeRewards(t *testing.T) {
	ok := &traj.ToolCall{Name: "calculator", Raw: "[CALC: 12 * 34]"}
	bad := &traj.ToolCall{Name: "calculator", Raw: "[CALC: 1", ParseError: "unterminated: ended"}
	capped := &traj.ToolCall{Name: "calculator", Raw: "[CALC: 2]", ParseError: "over_cap: past"}
	segs := []traj.Segment{
		{Kind: traj.SegmentModel, Turn: 0, Text: "12 times 34 is [CALC: 12 * 34]", Call: ok},
		{Kind: traj.SegmentTool, Turn: 0, Call: ok, Result: &traj.ToolResult{OK: true, Content: "408"}},
		{Kind: traj.SegmentModel, Turn: 1, Text: "then [CALC: 2]", Call: capped},
		{Kind: traj.SegmentTool, Turn: 1, Call: capped, Result: &traj.ToolResult{ErrorClass: "over_cap", Content: "error: over_cap: past"}},
		{Kind: traj.SegmentModel, Turn: 2, Text: "and [CALC: 9 / 1]", Call: &traj.ToolCall{Name: "calculator"}},
		{Kind: traj.SegmentTool, Turn: 2, Result: &traj.ToolResult{ErrorClass: "timeout", Content: "error: timeout"}},
		{Kind: traj.SegmentModel, Turn: 3, Text: "The answer is 408. [CALC: 1", Call: bad},
	}
	w := DefaultRewardWeights()
	r := ComputeRewards(segs, w)
	if r.Calls != 4 || r.Succeeded != 1 || r.Used != 1 || r.Invalid != 1 || r.OverCap != 1 {
		t.Fatalf("counts = %+v", r)
	}
	want := map[string]float64{
		PartToolSuccess: 0.1, PartToolUse: 0.2, PartCallCost: -0.4, PartInvalidCall: -0.2, PartOverCap: -0.3,
	}
	for k, v := range want {
		if math.Abs(r.Parts[k]-v) > 1e-9 {
			t.Errorf("part %s = %v, want %v", k, r.Parts[k], v)
		}
	}
	wantSteps := []float64{-0.1 + 0.1 + 0.2, -0.1 - 0.3, -0.1, -0.1 - 0.2}
	if len(r.Steps) != len(wantSteps) {
		t.Fatalf("steps = %v", r.Steps)
	}
	for i := range wantSteps {
		if math.Abs(r.Steps[i]-wantSteps[i]) > 1e-9 {
			t.Errorf("step %d = %v, want %v", i, r.Steps[i], wantSteps[i])
		}
	}
	if math.Abs(r.Total()-(-0.6)) > 1e-9 {
		t.Errorf("total = %v", r.Total())
	}
	if z := ComputeRewards(segs, RewardWeights{}); z.Total() != 0 {
		t.Errorf("zero weights total %v", z.Total())
	}
}

func TestResultUsed(t *testing.T) {
	cases := []struct {
		content, later string
		want           bool
	}{
		{"408", "The answer is 408.", true},
		{"408", "The answer is 4080.", false},
		{"56088", "The answer is 56,088.", true},
		{"0.25", "so 0.25 it is", true},
		{"0.25", "so 10.25 it is", false},
		{"7", "The answer is 7.", true},
		{"Paris", "It is Paris.", true},
		{"Paris", "It is Rome.", false},
		{"The population was 2,148,000 in 2020 according to the census of that year, which...", "about 2148000 people", true},
		{"The population was 2,148,000 in 2020 according to the census of that year, which...", "many people", false},
		{"408", "", false},
	}
	for _, c := range cases {
		if got := resultUsed(c.content, c.later); got != c.want {
			t.Errorf("resultUsed(%q, %q) = %v", c.content, c.later, got)
		}
	}
}
