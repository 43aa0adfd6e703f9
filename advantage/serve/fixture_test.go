package serve

import (
	"fmt"
	"math/rand/v2"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

// streamGroup is group number i of job: testG trajectories of one to four
// steps, reference logprobs and rewards that differ (except every 7th group,
// whose rewards are all equal); every 5th from the 2nd is schema v1.
func streamGroup(job string, i int) *traj.Group {
	rng := rand.New(rand.NewPCG(uint64(i), 99))
	o := trajtest.Options{Job: job, Prompt: fmt.Sprintf("p%05d", i), Size: testG, PolicyVersion: 5,
		Temperature: trajtest.Temperature(0.7), Sample: trajtest.RolloutRewards}
	var shape trajtest.Shape
	if i%7 == 0 {
		shape.Steps = [2]int{2, 2}
		o.Sample = func(k int, t *traj.Trajectory) {
			t.StepRewards[0], t.StepRewards[1] = 0.5, 0.5
			trajtest.RolloutRewards(k, t)
		}
	}
	g := trajtest.Random(rng, o, shape)
	if i%5 == 2 {
		trajtest.AsV1(g) // old data still flows through
	}
	return g
}

// iterationGroup is prompt's group of job sampled in iteration k: its own
// rewards, ids job/prompt@k/i (job/prompt/i in iteration 0).
func iterationGroup(job, prompt string, k int) *traj.Group {
	return trajtest.Random(rand.New(rand.NewPCG(uint64(k), 7)), trajtest.Options{Job: job, Prompt: prompt, Iteration: k, Size: testG,
		PolicyVersion: 5, Temperature: trajtest.Temperature(0.7), Sample: trajtest.RolloutRewards}, trajtest.Shape{})
}
