package advantage

import (
	"fmt"
	"math/rand/v2"

	"github.com/toolrl/toolrl/traj"
)

// step is one model segment of a test trajectory and the tool segment that
// follows it (toolLen 0: none).
type step struct {
	modelLen, toolLen int
	reward            float64
}

// makeTraj builds a valid trajectory of group "job/p" with a 2-token prompt,
// the given steps, total reward total, sampling temperature 0.7, and logprob
// −1 on every sampled token.
func makeTraj(index, groupSize int, total float64, steps ...step) traj.Trajectory {
	temperature := 0.7
	t := traj.Trajectory{
		Schema: traj.TrajectorySchema, ID: traj.TrajectoryID("job", "p", 0, index), JobID: "job", PromptID: "p",
		GroupID: "job/p", GroupSize: groupSize, SampleIndex: index, PolicyVersion: 5, Temperature: &temperature,
		Model: traj.ModelRef{Name: "test"}, Tokens: []int32{1, 2}, PromptLen: 2,
		FinishReason: traj.FinishStop, Reward: traj.Reward{Total: total},
	}
	pos := 0
	for k, s := range steps {
		t.Segments = append(t.Segments, traj.Segment{Kind: traj.SegmentModel, Turn: k, Start: pos, End: pos + s.modelLen})
		for j := 0; j < s.modelLen; j++ {
			t.Tokens = append(t.Tokens, int32(10+j))
			t.LossMask = append(t.LossMask, 1)
			t.Logprobs = append(t.Logprobs, -1)
		}
		pos += s.modelLen
		t.StepRewards = append(t.StepRewards, s.reward)
		if s.toolLen > 0 {
			t.Segments = append(t.Segments, traj.Segment{Kind: traj.SegmentTool, Turn: k, Start: pos, End: pos + s.toolLen,
				Result: &traj.ToolResult{OK: true, Content: "x"}})
			for j := 0; j < s.toolLen; j++ {
				t.Tokens = append(t.Tokens, 99)
				t.LossMask = append(t.LossMask, 0)
				t.Logprobs = append(t.Logprobs, 0)
			}
			pos += s.toolLen
		}
	}
	if err := t.Validate(); err != nil {
		panic(fmt.Sprintf("fixture: %v", err))
	}
	return t
}

// randomGroup builds a valid group of g trajectories with 1-4 steps each, tool
// segments between steps, random rewards and random reference logprobs.
func randomGroup(rng *rand.Rand, g int) traj.Group {
	trs := make([]traj.Trajectory, g)
	for i := range trs {
		nsteps := 1 + rng.IntN(4)
		steps := make([]step, nsteps)
		for k := range steps {
			steps[k] = step{modelLen: 1 + rng.IntN(5), reward: rng.NormFloat64()}
			if k < nsteps-1 {
				steps[k].toolLen = 1 + rng.IntN(3)
			}
		}
		t := makeTraj(i, g, rng.NormFloat64()*2, steps...)
		t.RefLogprobs = make([]float32, len(t.LossMask))
		for j, m := range t.LossMask {
			if m == 1 {
				t.Logprobs[j] = -float32(rng.ExpFloat64())
				t.RefLogprobs[j] = -float32(rng.ExpFloat64())
			}
		}
		trs[i] = t
	}
	group := traj.NewGroup(trs)
	if err := group.Validate(); err != nil {
		panic(fmt.Sprintf("fixture: %v", err))
	}
	return group
}

// asV1 makes g what toolrl wrote before schema v2: group and trajectories
// toolrl.trajectory/v1, without temperature.
func asV1(g *traj.Group) {
	g.Schema = traj.TrajectorySchemaV1
	for i := range g.Trajectories {
		g.Trajectories[i].Schema, g.Trajectories[i].Temperature = traj.TrajectorySchemaV1, nil
	}
}
