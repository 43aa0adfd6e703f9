package offline

import (
	"fmt"
	"math/rand/v2"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

const testG = 4 // trajectories per test group

// testGroup is group number i of job "job": testG trajectories of one to
// four steps with reference logprobs, each reward total the sum of its step
// rewards, as the rollout writes them.
func testGroup(i int) *traj.Group {
	return trajtest.Random(rand.New(rand.NewPCG(uint64(i), 99)), trajtest.Options{Prompt: fmt.Sprintf("p%05d", i), Size: testG,
		PolicyVersion: 5, Temperature: trajtest.Temperature(0.7), Sample: trajtest.RolloutRewards}, trajtest.Shape{})
}
