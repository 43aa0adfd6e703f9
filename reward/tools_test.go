package reward

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// Every class of call with weights that make each part visible: the parts,
// the counts and the step each call's parts land on.
func TestComputeToolRewards(t *testing.T) {
	ok := &traj.ToolCall{Name: "calculator", Raw: "[CALC: 12 * 34]"}
	bad := &traj.ToolCall{Name: "calculator", Raw: "[CALC: 1", ParseError: "unterminated: ended"}
	capped := &traj.ToolCall{Name: "calculator", Raw: "[CALC: 2]", ParseError: "over_cap: past"}
	five := &traj.ToolCall{Name: "calculator", Raw: "[CALC: five]"}
	segs := []traj.Segment{
		{Kind: traj.SegmentModel, Turn: 0, Text: "12 times 34 is [CALC: 12 * 34]", Call: ok},
		{Kind: traj.SegmentTool, Turn: 0, Call: ok, Result: &traj.ToolResult{OK: true, Content: "408"}},
		{Kind: traj.SegmentModel, Turn: 1, Text: "then [CALC: 2]", Call: capped},
		{Kind: traj.SegmentTool, Turn: 1, Call: capped, Result: &traj.ToolResult{ErrorClass: "over_cap", Content: "error: over_cap: past"}},
		{Kind: traj.SegmentModel, Turn: 2, Text: "and [CALC: 9 / 1]", Call: &traj.ToolCall{Name: "calculator"}},
		{Kind: traj.SegmentTool, Turn: 2, Result: &traj.ToolResult{ErrorClass: "timeout", Content: "error: timeout"}},
		{Kind: traj.SegmentModel, Turn: 3, Text: "or [CALC: five]", Call: five},
		{Kind: traj.SegmentTool, Turn: 3, Call: five, Result: &traj.ToolResult{ErrorClass: "invalid_args", Content: "error: invalid_args: syntax error"}},
		{Kind: traj.SegmentModel, Turn: 4, Text: "The answer is 408. [CALC: 1", Call: bad},
	}
	w := ToolWeights{ToolSuccess: 0.1, ToolUse: 0.2, CallCost: -0.1, ToolFailure: -0.25, InvalidCall: -0.2, OverCap: -0.3}
	r := ComputeToolRewards(segs, w)
	if r.Calls != 5 || r.Succeeded != 1 || r.Used != 1 || r.Failed != 1 || r.Invalid != 2 || r.OverCap != 1 {
		t.Fatalf("counts = %+v", r)
	}
	want := map[string]float64{
		PartToolSuccess: 0.1, PartToolUse: 0.2, PartCallCost: -0.5, PartToolFailure: -0.25, PartInvalidCall: -0.4, PartOverCap: -0.3,
	}
	if len(r.Parts) != len(want) {
		t.Errorf("parts %v, want the %d names of %v", r.Parts, len(want), want)
	}
	for k, v := range want {
		if math.Abs(r.Parts[k]-v) > 1e-9 {
			t.Errorf("part %s = %v, want %v", k, r.Parts[k], v)
		}
	}
	wantSteps := []float64{-0.1 + 0.1 + 0.2, -0.1 - 0.3, -0.1 - 0.25, -0.1 - 0.2, -0.1 - 0.2}
	if len(r.Steps) != len(wantSteps) {
		t.Fatalf("steps = %v", r.Steps)
	}
	sum := 0.0
	for i := range wantSteps {
		if math.Abs(r.Steps[i]-wantSteps[i]) > 1e-9 {
			t.Errorf("step %d = %v, want %v", i, r.Steps[i], wantSteps[i])
		}
		sum += r.Steps[i]
	}
	if math.Abs(r.Total()-(-1.15)) > 1e-9 || math.Abs(sum-r.Total()) > 1e-9 {
		t.Errorf("total = %v, steps sum to %v", r.Total(), sum)
	}
	if z := ComputeToolRewards(segs, ToolWeights{}); z.Total() != 0 {
		t.Errorf("zero weights total %v", z.Total())
	}

	// A call recorded but not run (the last allowed turn) costs only the call.
	notRun := ComputeToolRewards([]traj.Segment{{Kind: traj.SegmentModel, Text: "[CALC: 1+1]", Call: &traj.ToolCall{Name: "calculator"}}}, w)
	if notRun.Calls != 1 || notRun.Failed+notRun.Invalid+notRun.Succeeded != 0 || math.Abs(notRun.Total()+0.1) > 1e-12 {
		t.Errorf("call without result: %+v", notRun)
	}
	// A tool segment before any model segment: its parts go to the first step.
	orphan := ComputeToolRewards([]traj.Segment{
		{Kind: traj.SegmentTool, Result: &traj.ToolResult{ErrorClass: "timeout"}},
		{Kind: traj.SegmentModel, Text: "so 3"},
	}, w)
	if len(orphan.Steps) != 1 || math.Abs(orphan.Steps[0]-orphan.Total()) > 1e-12 || math.Abs(orphan.Total()+0.35) > 1e-12 {
		t.Errorf("orphan tool segment: steps %v, total %v", orphan.Steps, orphan.Total())
	}
}

// The default weights: nothing is paid for calling; a call costs 0.1, and
// 0.2 more when it fails, times out, is invalid (parse or invalid_args).
func TestDefaultToolWeights(t *testing.T) {
	w := DefaultToolWeights()
	if w != (ToolWeights{ToolSuccess: 0, ToolUse: 0, CallCost: -0.1, ToolFailure: -0.2, InvalidCall: -0.2, OverCap: -0.3}) {
		t.Fatalf("defaults %+v", w)
	}
	one := func(res *traj.ToolResult, parseErr string) float64 {
		call := &traj.ToolCall{Name: "calculator", ParseError: parseErr}
		segs := []traj.Segment{{Kind: traj.SegmentModel, Text: "[CALC: x]", Call: call}}
		if res != nil {
			segs = append(segs, traj.Segment{Kind: traj.SegmentTool, Call: call, Result: res})
		}
		segs = append(segs, traj.Segment{Kind: traj.SegmentModel, Text: " so the answer is 408."})
		return ComputeToolRewards(segs, w).Total()
	}
	okUsed := one(&traj.ToolResult{OK: true, Content: "408"}, "")
	okUnused := one(&traj.ToolResult{OK: true, Content: "407"}, "")
	if math.Abs(okUsed+0.1) > 1e-12 || okUnused != okUsed {
		t.Errorf("ok call: used %v, unused %v, want -0.1 both", okUsed, okUnused)
	}
	for _, c := range []struct {
		name     string
		res      *traj.ToolResult
		parseErr string
		want     float64
	}{
		{"timeout", &traj.ToolResult{ErrorClass: tools.ClassTimeout}, "", -0.3},
		{"tool_error", &traj.ToolResult{ErrorClass: tools.ClassToolError}, "", -0.3},
		{"panic", &traj.ToolResult{ErrorClass: tools.ClassPanic}, "", -0.3},
		{"invalid_args", &traj.ToolResult{ErrorClass: tools.ClassInvalidArgs}, "", -0.3},
		{"schema", &traj.ToolResult{ErrorClass: tools.ClassSchema}, "schema: x", -0.3},
		{"unterminated", nil, "unterminated: x", -0.3},
		{"over_cap", &traj.ToolResult{ErrorClass: tools.ClassOverCap}, "over_cap: x", -0.4},
	} {
		got := one(c.res, c.parseErr)
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		if got >= okUsed {
			t.Errorf("%s: %v, not below an ok call's %v", c.name, got, okUsed)
		}
	}
}

// A calculator argument that is not an arithmetic expression is rejected as
// invalid_args, and ComputeToolRewards counts it as an invalid call; arithmetic
// without a result is a tool_error, a failed call.
func TestCalculatorRejectionIsInvalidCall(t *testing.T) {
	reg, err := tools.LoadRegistry(context.Background(), "../models/calc/tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	ex := tools.NewExecutor(reg, tools.ExecutorOptions{})
	for _, c := range []struct {
		expr, class string
		invalid     bool
	}{
		{"five", tools.ClassInvalidArgs, true},
		{"12 apples * 3", tools.ClassInvalidArgs, true},
		{"", tools.ClassInvalidArgs, true},
		{"2 ^ 100000", tools.ClassInvalidArgs, true}, // past a limit: the argument is still the model's
		{"1 / 0", tools.ClassToolError, false},
		{"2 ^ 0.5", tools.ClassToolError, false},
	} {
		args, _ := json.Marshal(map[string]string{"expression": c.expr})
		p := tools.NewBracketParser(reg, tools.ParserOptions{})
		r := p.Add("[CALC: "+c.expr+"]", true)
		if len(r.Calls) != 1 {
			t.Fatalf("%q: no call parsed", c.expr)
		}
		res := ex.Execute(context.Background(), r.Calls[0])
		if res.OK || res.ErrorClass != c.class {
			t.Errorf("%s: result %+v, want class %s", args, res, c.class)
			continue
		}
		call := traj.ToolCall{Name: "calculator", Arguments: args, Raw: "[CALC: " + c.expr + "]"}
		rw := ComputeToolRewards([]traj.Segment{
			{Kind: traj.SegmentModel, Text: call.Raw, Call: &call},
			{Kind: traj.SegmentTool, Call: &call, Result: &res},
		}, DefaultToolWeights())
		if got := rw.Invalid == 1; got != c.invalid || rw.Failed == 1 == c.invalid {
			t.Errorf("%q: invalid %d, failed %d", c.expr, rw.Invalid, rw.Failed)
		}
	}
}

// "Result used": the result's value as a number token of the model's later
// text; the rule's edges.
func TestResultUsed(t *testing.T) {
	long := "The population was 2,148,000 in 2020 according to the census of that year, which..."
	cases := []struct {
		content, later string
		want           bool
	}{
		{"408", "The answer is 408.", true},
		{"408", "The answer is 4080.", false},
		{"408", "The answer is 1408.", false},
		{"408", "The answer is 408.5.", false},
		{"408", "so 408.0 it is", true},
		{"408", "[CALC: 408 / 2]", true}, // chained into the next call
		{"56088", "The answer is 56,088.", true},
		{"56,088", "The answer is 56088.", true},
		{"45", "the answers are 4,5", false}, // a list, not a thousands separator
		{"0.25", "so 0.25 it is", true},
		{"0.25", "so .25 it is", true},
		{"0.25", "so 10.25 it is", false},
		{"25", "so 0.25 it is", false},
		{"0.5", "so 0.50", true},
		{"-5", "The answer is -5.", true},
		{"-5", "(-5)", true},
		{"5", "The answer is -5.", false},
		{"-5", "10-5 = 5", false},
		{"5", "10-5 = 6", true},
		{"7", "The answer is 7.", true},
		{"0.333333", "about 1/3", false}, // another form of the value
		{"Paris", "It is Paris.", true},
		{"Paris", "it is PARIS", true},
		{"Paris", "It is Parisian.", false},
		{"Paris", "It is Rome.", false},
		{"New  York", "in new york,", true},
		{long, "about 2148000 people", true},
		{long, "many people", false},
		{"408", "", false},
		{"", "408", false},
	}
	for _, c := range cases {
		if got := resultUsed(c.content, c.later); got != c.want {
			t.Errorf("resultUsed(%q, %q) = %v", c.content, c.later, got)
		}
	}
}

// ResultUsed reads only the model segments it is given (those after the
// call's tool segment): not the injected result, not the call itself.
func TestResultUsedReadsOnlyLaterModelText(t *testing.T) {
	call := &traj.ToolCall{Name: "calculator", Raw: "[CALC: 5]"}
	res := &traj.ToolResult{OK: true, Content: "5"}
	score := func(segs ...traj.Segment) int { return ComputeToolRewards(segs, DefaultToolWeights()).Used }
	callSeg := traj.Segment{Kind: traj.SegmentModel, Text: "5 is [CALC: 5]", Call: call}
	toolSeg := traj.Segment{Kind: traj.SegmentTool, Text: " = 5", Call: call, Result: res}
	if n := score(callSeg, toolSeg, traj.Segment{Kind: traj.SegmentModel, Text: ". Done."}); n != 0 {
		t.Errorf("the call's own text and the injection counted as use (%d)", n)
	}
	if n := score(callSeg, toolSeg, traj.Segment{Kind: traj.SegmentModel, Text: ". The answer is 5."}); n != 1 {
		t.Errorf("later use not counted (%d)", n)
	}
	tool2 := traj.Segment{Kind: traj.SegmentTool, Text: " = 5", Result: &traj.ToolResult{OK: true, Content: "5"}}
	second := traj.Segment{Kind: traj.SegmentModel, Text: " and [CALC: 2+3]", Call: &traj.ToolCall{Name: "calculator"}}
	if n := score(callSeg, toolSeg, second, tool2, traj.Segment{Kind: traj.SegmentModel, Text: " so 4."}); n != 0 {
		t.Errorf("another call's injected result counted as use (%d)", n)
	}
}

// TestComputeToolRewardsPerTurn: a turn of three calls (valid, malformed,
// valid) answered by three tool segments in order, then a last turn whose
// two calls the trajectory ended before answering: every call is scored on
// its own, each turn's calls go to its step, and a result counts as used
// only through text after its tool turn (not the turn's later calls).
func TestComputeToolRewardsPerTurn(t *testing.T) {
	ok := func(expr string) *traj.ToolCall {
		return &traj.ToolCall{Name: "calculator", Arguments: []byte(`{"expression":"` + expr + `"}`), Raw: "[CALC: " + expr + "]"}
	}
	a, bad, b, c, d := ok("1+1"), &traj.ToolCall{Name: "calculator", Raw: "[CALC: ", ParseError: "bad_json: x"}, ok("3*3"), ok("4*4"), ok("5*5")
	segs := []traj.Segment{
		{Kind: traj.SegmentModel, Turn: 0, Text: "[CALC: 1+1]", Call: a},
		{Kind: traj.SegmentModel, Turn: 0, Text: "[CALC: ", Call: bad},
		{Kind: traj.SegmentModel, Turn: 0, Text: "[CALC: 3*3] 2", Call: b}, // "2" before the tool turn: not a use of 1+1
		{Kind: traj.SegmentTool, Turn: 0, Call: a, Result: &traj.ToolResult{OK: true, Content: "2"}},
		{Kind: traj.SegmentTool, Turn: 0, Call: bad, Result: &traj.ToolResult{ErrorClass: tools.ClassBadJSON, Content: "error"}},
		{Kind: traj.SegmentTool, Turn: 0, Call: b, Result: &traj.ToolResult{OK: true, Content: "9"}},
		{Kind: traj.SegmentModel, Turn: 1, Text: "so 9 [CALC: 4*4]", Call: c},
		{Kind: traj.SegmentModel, Turn: 1, Text: "[CALC: 5*5]", Call: d},
	}
	w := ToolWeights{ToolSuccess: 1, ToolUse: 10, CallCost: -100, InvalidCall: -1000}
	r := ComputeToolRewards(segs, w)
	if r.Calls != 5 || r.Succeeded != 2 || r.Used != 1 || r.Invalid != 1 || r.Failed != 0 {
		t.Fatalf("counts calls %d ok %d used %d invalid %d failed %d, want 5 2 1 1 0", r.Calls, r.Succeeded, r.Used, r.Invalid, r.Failed)
	}
	// Turn 0: three calls -300, two ok +2, one used +10, one invalid -1000;
	// turn 1: two unanswered calls -200.
	if len(r.Steps) != 2 || r.Steps[0] != -1288 || r.Steps[1] != -200 {
		t.Fatalf("steps %v, want [-1288 -200]", r.Steps)
	}
	if r.Parts[PartInvalidCall] != -1000 || r.Parts[PartToolUse] != 10 || r.Parts[PartCallCost] != -500 {
		t.Fatalf("parts %v", r.Parts)
	}
}
