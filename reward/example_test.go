package reward_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolrl/toolrl/reward"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// A rollout in miniature: model text arrives in deltas, the parser finds the
// bracket call, the episode executes it, the result is injected, and the
// reward parts are computed from the segments.
func ExampleComputeToolRewards() {
	ctx := context.Background()
	reg, err := tools.LoadRegistry(ctx, "../tools/testdata/calc.yaml")
	if err != nil {
		panic(err)
	}
	defer reg.Close()
	ex := tools.NewExecutor(reg, tools.ExecutorOptions{MaxCallsPerTrajectory: 4})
	ep := ex.NewEpisode()
	p := tools.NewBracketParser(reg, tools.ParserOptions{})

	deltas := []string{"12 times 34: [CA", "LC: 12 ", "* 34]", " so the answer is 408."}
	var segs []traj.Segment
	var text strings.Builder
	turn := 0
	for i, d := range deltas {
		r := p.Add(d, i == len(deltas)-1)
		text.WriteString(d)
		if len(r.Calls) == 0 {
			continue
		}
		call, result := ep.Execute(ctx, turn, r.Calls[0])
		inject := tools.BracketInjection(result)
		fmt.Printf("call %s %s -> inject %q\n", call.Name, call.Arguments, inject)
		segs = append(segs,
			traj.Segment{Kind: traj.SegmentModel, Turn: turn, Text: text.String(), Call: &call},
			traj.Segment{Kind: traj.SegmentTool, Turn: turn, Text: inject, Call: &call, Result: &result})
		text.Reset()
		turn++
	}
	segs = append(segs, traj.Segment{Kind: traj.SegmentModel, Turn: turn, Text: text.String()})
	rw := reward.ComputeToolRewards(segs, reward.DefaultToolWeights())
	fmt.Printf("calls %d, ok %d, result used %d; call_cost %.1f steps %.1f\n",
		rw.Calls, rw.Succeeded, rw.Used, rw.Parts[reward.PartCallCost], rw.Steps)
	// Output:
	// call calculator {"expression":"12 * 34"} -> inject " = 408"
	// calls 1, ok 1, result used 1; call_cost -0.1 steps [-0.1 0.0]
}
