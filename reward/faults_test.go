package reward

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/tools/calculator"
	"github.com/toolrl/toolrl/traj"
)

// TestInjectedFaultsScoreAsWhatTheyAre runs one calculator call under each
// injected fault (tools.Faults, at rate 1) through the real executor and
// scores it unchanged: an explicit error or a timeout (drawn, or a latency
// past the timeout) is a failed call (call_cost + tool_failure), exactly as
// the tool's own failures are; an implicit failure is a success
// (call_cost + tool_success, and tool_use when the text copies it), since
// the policy cannot tell it from a right result. The scoring reads the
// classes only; Fault changes nothing in it.
func TestInjectedFaultsScoreAsWhatTheyAre(t *testing.T) {
	w := ToolWeights{ToolSuccess: 0.1, ToolUse: 0.2, CallCost: -0.1, ToolFailure: -0.25, InvalidCall: -0.2, OverCap: -0.3}
	for _, c := range []struct {
		name      string
		faults    tools.Faults
		fault     string
		failed    bool
		wantParts map[string]float64
	}{
		{"error", tools.Faults{ErrorRate: 1}, tools.FaultError, true, map[string]float64{PartCallCost: -0.1, PartToolFailure: -0.25}},
		{"timeout", tools.Faults{TimeoutRate: 1}, tools.FaultTimeout, true, map[string]float64{PartCallCost: -0.1, PartToolFailure: -0.25}},
		{"latency", tools.Faults{Latency: tools.Latency{Dist: tools.LatencyFixed, Median: time.Hour}}, tools.FaultLatency, true, map[string]float64{PartCallCost: -0.1, PartToolFailure: -0.25}},
		{"implicit", tools.Faults{ImplicitRate: 1}, tools.FaultImplicit, false, map[string]float64{PartCallCost: -0.1, PartToolSuccess: 0.1, PartToolUse: 0.2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := tools.NewRegistry()
			if err := reg.Register(tools.NewCalculator(calculator.Limits{}), tools.Settings{Bracket: "CALC", Faults: c.faults}); err != nil {
				t.Fatal(err)
			}
			ex := tools.NewExecutor(reg, tools.ExecutorOptions{})
			call, res := ex.NewSeededEpisode(1).Execute(context.Background(), 0,
				tools.Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"12 * 34"}`), Raw: "[CALC: 12 * 34]"})
			if res.Fault != c.fault || res.OK == c.failed {
				t.Fatalf("result %+v, want fault %s, failed %v", res, c.fault, c.failed)
			}
			segs := []traj.Segment{
				{Kind: traj.SegmentModel, Turn: 0, Text: "[CALC: 12 * 34]", Call: &call},
				{Kind: traj.SegmentTool, Turn: 0, Call: &call, Result: &res},
				{Kind: traj.SegmentModel, Turn: 1, Text: "The answer is " + res.Content + "."},
			}
			r := ComputeToolRewards(segs, w)
			if c.failed && (r.Failed != 1 || r.Succeeded != 0) || !c.failed && (r.Succeeded != 1 || r.Used != 1 || r.Failed != 0) {
				t.Errorf("counts %+v", r)
			}
			for _, k := range partOrder {
				if got, want := r.Parts[k], c.wantParts[k]; got != want {
					t.Errorf("part %s = %v, want %v", k, got, want)
				}
			}
			// Without the Fault field the score is the same: it reads classes.
			plain := res
			plain.Fault = ""
			segs[1].Result = &plain
			if r2 := ComputeToolRewards(segs, w); r2.Total() != r.Total() {
				t.Errorf("without Fault: total %v, with %v", r2.Total(), r.Total())
			}
		})
	}
}
