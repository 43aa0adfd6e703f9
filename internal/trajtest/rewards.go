package trajtest

import (
	"math"

	"github.com/toolrl/toolrl/traj"
)

// BadReward is a reward the advantage stage must refuse
// (traj.Trajectory.ValidateRewardSums) when it replaces the reward of a
// trajectory whose step rewards sum to its old total, and words its reason
// names.
type BadReward struct {
	Name   string
	Reward traj.Reward
	Reason string
}

// BadRewards are the cases the service and offline tests send through their
// paths. The last, an infinite total, cannot be written as JSON: a test
// writes "1e999" for it, which the decoder refuses as out of range.
var BadRewards = []BadReward{
	{"parts disagree", traj.Reward{Total: 1, Parts: map[string]float64{"outcome": 1, "call_cost": -0.1}}, "reward_parts sum to 0.9"},
	{"absurd total", traj.Reward{Total: 1e300}, "magnitude"},
	{"steps disagree", traj.Reward{Total: 123}, "step_rewards sum to"},
	{"infinite total", traj.Reward{Total: math.Inf(1)}, "reward: strconv.ParseFloat"},
}
