package serve

import (
	"math"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// badRewards are rewards the advantage stage must refuse, each with the words
// its reason names.
var badRewards = []struct {
	name   string
	reward traj.Reward
	reason string
}{
	{"parts disagree", traj.Reward{Total: 1, Parts: map[string]float64{"outcome": 1, "call_cost": -0.1}}, "reward.parts sum to 0.9"},
	{"absurd total", traj.Reward{Total: 1e300}, "magnitude"},
	{"infinite total", traj.Reward{Total: math.Inf(1)}, "total"}, // refused by the decoder: out of range
	{"steps disagree", traj.Reward{Total: 123}, "step_rewards sum to"},
}

// TestServiceDeadLettersInconsistentReward: a group whose reward total is
// not the sum of its parts or of its step rewards, absurd or not finite goes to the dead letters
// with the reason, instead of giving advantages computed from it.
func TestServiceDeadLettersInconsistentReward(t *testing.T) {
	svc := &Service{opts: Options{Job: "job"}}
	for _, tc := range badRewards {
		g := streamGroup("job", 3)
		g.Trajectories[1].Reward = tc.reward
		payload, err := wire.EncodeGroup(g)
		if err != nil && !math.IsInf(tc.reward.Total, 0) {
			t.Fatal(err)
		}
		if err != nil { // the encoder refuses +Inf: write the JSON by hand
			good, _ := wire.EncodeGroup(streamGroup("job", 3))
			payload = []byte(strings.Replace(string(good), `"reward":{"total":`, `"reward":{"total":1e999,"x":`, 1))
		}
		wg := svc.decode(stream.Message{ID: "1-0", Values: map[string]any{stream.FieldGroup: string(payload), stream.FieldGroupID: g.GroupID}})
		if wg.err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !strings.Contains(wg.err.Error(), tc.reason) || !strings.Contains(wg.err.Error(), "group "+g.GroupID) {
			t.Errorf("%s: reason %q does not say what is wrong", tc.name, wg.err)
		}
	}
	// Rounding noise is not an error: parts that sum to the total only in exact arithmetic.
	g := streamGroup("job", 3)
	g.Trajectories[0].Reward = traj.Reward{Total: 0.3, Parts: map[string]float64{"outcome": 0.1, "format": 0.2}}
	steps := g.Trajectories[0].StepRewards
	clear(steps)
	steps[0], steps[len(steps)-1] = steps[0]+0.1, steps[len(steps)-1]+0.2 // [0.1, 0.2] or [0.30000000000000004]
	payload, _ := wire.EncodeGroup(g)
	if wg := svc.decode(stream.Message{ID: "1-0", Values: map[string]any{stream.FieldGroup: string(payload), stream.FieldGroupID: g.GroupID}}); wg.err != nil {
		t.Errorf("0.1 + 0.2 = 0.3 refused: %v", wg.err)
	}
}
