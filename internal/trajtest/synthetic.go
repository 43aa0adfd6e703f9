package trajtest

import (
	"fmt"
	"math/rand/v2"

	"github.com/toolrl/toolrl/traj"
)

// Synthetic is group i of job in the benchmarks' workload, realistic in
// size: g samples sharing a prompt of min(32, stepLen) tokens, each with
// three model steps of stepLen tokens separated by two tool results of
// stepLen/2 (stepLen ≥ 2), token ids below 32000 and reference logprobs
// (Random within that Shape), and the rollout's rewards: an outcome of 0 or
// 1 paid to the last step and a call cost of -0.1 to each of the others, so
// that the parts and the step rewards both sum to the total.
func Synthetic(job string, i, g, stepLen int) *traj.Group {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	o := Options{Job: job, Prompt: fmt.Sprintf("p%07d", i), Size: g, PolicyVersion: 1, Temperature: Temperature(1), Model: "synthetic",
		Sample: func(_ int, t *traj.Trajectory) {
			outcome := float64(rng.IntN(2))
			t.Seed = rng.Uint64()
			t.StepRewards = []float64{-0.1, -0.1, outcome}
			t.Reward = traj.Reward{Total: outcome - 0.2, Parts: map[string]float64{"outcome": outcome, "call_cost": -0.2}}
		}}
	prompt := min(32, stepLen)
	return Random(rng, o, Shape{Steps: [2]int{3, 3}, Model: [2]int{stepLen, stepLen}, Tool: [2]int{stepLen / 2, stepLen / 2},
		Prompt: [2]int{prompt, prompt}, Vocab: 32000})
}
