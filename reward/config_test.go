package reward

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/traj"
)

func defaultRewards(t *testing.T) Config {
	t.Helper()
	var c Config
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExtractAnswer(t *testing.T) {
	c := defaultRewards(t)
	cases := []struct{ text, answer, by string }{
		{`so \boxed{42} is it`, "42", "boxed"},
		{"The answer is 1,234.", "1,234", "answer_is"},
		{"the final answer is: -7.5 dollars", "-7.5", "answer_is"},
		{"The answer is 3. No wait, the answer is 4.", "4", "answer_is"},
		{"I think 12 then 13", "13", "last_number"},
		{"no digits here", "", ""},
		{`\boxed{9} and The answer is 8.`, "9", "boxed"},
	}
	for _, tc := range cases {
		got := c.ExtractAnswer(tc.text)
		if got.Answer != tc.answer || got.By != tc.by {
			t.Errorf("ExtractAnswer(%q) = %+v, want %q by %q", tc.text, got, tc.answer, tc.by)
		}
	}
	c.Regex = setting.Of(`#### (\S+)`)
	c.Extract = setting.Value[[]string]{}
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	if got := c.ExtractAnswer("work... #### 17 then 99"); got.Answer != "17" || got.By != "regex" {
		t.Errorf("regex extractor: %+v", got)
	}
	bad := Config{Extract: setting.Of([]string{"regex"})}
	if err := bad.Normalize(); err == nil {
		t.Error("extract [regex] without a regex accepted")
	}
	bad = Config{Extract: setting.Of([]string{"vibes"})}
	if err := bad.Normalize(); err == nil {
		t.Error("unknown extractor accepted")
	}
}

func TestAnswerMatches(t *testing.T) {
	c := defaultRewards(t)
	for _, tc := range []struct {
		got, want string
		match     bool
	}{
		{"56088", "56088", true}, {"56,088", "56088", true}, {"56088.0", "56088", true},
		{"1/3", "0.3333333333", true}, {"1/3", "0.33", false}, {"0.5", "1/2", true}, {"$12", "12", true},
		{"12", "13", false}, {"Paris", "paris", true}, {"Paris.", "Paris", true}, {"", "1", false},
	} {
		if got := c.AnswerMatches(tc.got, tc.want); got != tc.match {
			t.Errorf("AnswerMatches(%q, %q) = %v", tc.got, tc.want, got)
		}
	}
	c.Tolerance = setting.Of(1e-3)
	if !c.AnswerMatches("0.3333", "1/3") {
		t.Error("tolerance 1e-3 does not accept 0.3333 for 1/3")
	}
	// An explicit tolerance 0 is exact (it used to become the default 1e-6).
	exact := Config{Tolerance: setting.From(0.0, setting.File)}
	if err := exact.Normalize(); err != nil {
		t.Fatal(err)
	}
	if exact.AnswerMatches("0.5000000001", "1/2") || !exact.AnswerMatches("0.5", "1/2") {
		t.Error("tolerance 0 is not exact")
	}
	if !c.AnswerMatches("0.5000000001", "1/2") {
		t.Error("tolerance 1e-3 does not accept 0.5000000001 for 1/2")
	}
}

// A trajectory with one successful call whose result is used, then the
// correct answer: every part is paid and the step rewards sum to the total.
func TestScoreSplitsRewardIntoSteps(t *testing.T) {
	c := defaultRewards(t)
	args, _ := json.Marshal(map[string]string{"expression": "12*34"})
	call := &traj.ToolCall{Name: "calculator", Arguments: args, Raw: "[CALC: 12*34]"}
	tr := traj.Trajectory{
		Segments: []traj.Segment{
			{Kind: traj.SegmentModel, Turn: 0, Text: "[CALC: 12*34]", Call: call},
			{Kind: traj.SegmentTool, Turn: 0, Text: " = 408", Call: call, Result: &traj.ToolResult{OK: true, Content: "408"}},
			{Kind: traj.SegmentModel, Turn: 1, Text: " The answer is 408."},
		},
		FinishReason: traj.FinishStop,
	}
	if !c.Score(&tr, "408") {
		t.Fatal("correct answer not recognised")
	}
	w := DefaultToolWeights()
	want := map[string]float64{
		PartOutcome: 1, PartFormat: 0.1, PartToolSuccess: w.ToolSuccess, PartToolUse: w.ToolUse,
		PartCallCost: w.CallCost, PartToolFailure: 0, PartInvalidCall: 0, PartOverCap: 0,
		PartPenaltyClip: 0,
	}
	if len(tr.Reward.Parts) != len(want) {
		t.Errorf("parts %v, want the %d of %v", tr.Reward.Parts, len(want), want)
	}
	total := 0.0
	for k, v := range want {
		if math.Abs(tr.Reward.Parts[k]-v) > 1e-12 {
			t.Errorf("part %s = %v, want %v", k, tr.Reward.Parts[k], v)
		}
		total += v
	}
	if math.Abs(tr.Reward.Total-total) > 1e-9 {
		t.Errorf("total %v, want %v", tr.Reward.Total, total)
	}
	if len(tr.StepRewards) != 2 {
		t.Fatalf("step rewards %v, want one per model segment", tr.StepRewards)
	}
	if math.Abs(tr.StepRewards[0]+tr.StepRewards[1]-tr.Reward.Total) > 1e-9 {
		t.Errorf("steps %v do not sum to the total %v", tr.StepRewards, tr.Reward.Total)
	}
	if math.Abs(tr.StepRewards[1]-1.1) > 1e-12 {
		t.Errorf("last step %v, want outcome + format = 1.1", tr.StepRewards[1])
	}

	// The tool's result alone is not an answer; a cut-off response earns no format.
	tr2 := tr
	tr2.Segments = tr.Segments[:2]
	tr2.FinishReason = traj.FinishLength
	if c.Score(&tr2, "408") {
		t.Error("an answer found only in injected text counted")
	}
	if tr2.Reward.Parts[PartFormat] != 0 {
		t.Error("format paid on a response cut at the length limit")
	}
}
