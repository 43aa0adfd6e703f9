package trajtest

import (
	"fmt"
	"math/rand/v2"

	"github.com/toolrl/toolrl/traj"
)

// Synthetic is a realistic-sized group, the benchmarks' workload: g trajectories with a prompt of
// min(32, stepLen) tokens and a response of three model steps of stepLen tokens separated by
// two tool results of stepLen/2 tokens, with reference logprobs and step
// rewards (the rollout's: parts and step rewards sum to the total).
func Synthetic(job string, i, g, stepLen int) *traj.Group {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	prompt := fmt.Sprintf("p%07d", i)
	trs := make([]traj.Trajectory, g)
	for k := range trs {
		temperature := 1.0
		t := traj.Trajectory{
			Schema: traj.TrajectorySchema, ID: traj.TrajectoryID(job, prompt, 0, k), JobID: job, PromptID: prompt,
			GroupID: traj.GroupID(job, prompt, 0), GroupSize: g, SampleIndex: k, PolicyVersion: 1, Seed: rng.Uint64(), Temperature: &temperature,
			Model: traj.ModelRef{Name: "synthetic"}, PromptLen: min(32, stepLen), FinishReason: traj.FinishStop,
		}
		// The rollout's rewards: the parts sum to the total, and so do the
		// step rewards (the outcome is paid to the last step).
		outcome := float64(rng.IntN(2))
		t.Reward = traj.Reward{Total: outcome - 0.2, Parts: map[string]float64{"outcome": outcome, "call_cost": -0.2}}
		for j := 0; j < t.PromptLen; j++ {
			t.Tokens = append(t.Tokens, int32(rng.IntN(32000)))
		}
		pos := 0
		for s := 0; s < 3; s++ {
			t.Segments = append(t.Segments, traj.Segment{Kind: traj.SegmentModel, Turn: s, Start: pos, End: pos + stepLen})
			for j := 0; j < stepLen; j++ {
				t.Tokens = append(t.Tokens, int32(rng.IntN(32000)))
				t.LossMask = append(t.LossMask, 1)
				t.Logprobs = append(t.Logprobs, -float32(rng.ExpFloat64()))
				t.RefLogprobs = append(t.RefLogprobs, -float32(rng.ExpFloat64()))
			}
			pos += stepLen
			t.StepRewards = append(t.StepRewards, -0.1)
			if s < 2 {
				n := stepLen / 2
				t.Segments = append(t.Segments, traj.Segment{Kind: traj.SegmentTool, Turn: s, Start: pos, End: pos + n,
					Result: &traj.ToolResult{OK: true, Content: "42"}})
				for j := 0; j < n; j++ {
					t.Tokens = append(t.Tokens, int32(rng.IntN(32000)))
					t.LossMask = append(t.LossMask, 0)
					t.Logprobs = append(t.Logprobs, 0)
					t.RefLogprobs = append(t.RefLogprobs, 0)
				}
				pos += n
			}
		}
		t.StepRewards[2] = outcome
		trs[k] = t
	}
	gr := traj.NewGroup(trs)
	return &gr
}
