package serve

import (
	"math"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// TestServiceDeadLettersInconsistentReward: a group whose reward total is
// not the sum of its parts or of its step rewards, absurd or not finite goes
// to the dead letters with the reason and the group, instead of giving
// advantages computed from it.
func TestServiceDeadLettersInconsistentReward(t *testing.T) {
	svc := &Service{opts: Options{Job: "job"}}
	for _, tc := range trajtest.BadRewards {
		g := streamGroup("job", 3)
		g.Trajectories[1].Reward = tc.Reward
		payload, err := wire.EncodeGroup(g)
		if err != nil && !math.IsInf(tc.Reward.Total, 0) {
			t.Fatal(err)
		}
		if err != nil { // the encoder refuses +Inf: write the JSON by hand
			good, _ := wire.EncodeGroup(streamGroup("job", 3))
			payload = []byte(strings.Replace(string(good), `"reward":`, `"reward":1e999,"reward_x":`, 1))
		}
		decoded := svc.decode(stream.Message{ID: "1-0", Values: map[string]any{stream.FieldGroup: string(payload), stream.FieldGroupID: g.GroupID}})
		if decoded.err == nil {
			t.Errorf("%s: accepted", tc.Name)
			continue
		}
		if !strings.Contains(decoded.err.Error(), tc.Reason) || !strings.Contains(decoded.err.Error(), "group "+g.GroupID) {
			t.Errorf("%s: reason %q does not say what is wrong", tc.Name, decoded.err)
		}
	}
	// Rounding noise is not an error: parts that sum to the total only in exact arithmetic.
	g := streamGroup("job", 3)
	g.Trajectories[0].Reward = traj.Reward{Total: 0.3, Parts: map[string]float64{"outcome": 0.1, "format": 0.2}}
	steps := g.Trajectories[0].StepRewards
	clear(steps)
	steps[0], steps[len(steps)-1] = steps[0]+0.1, steps[len(steps)-1]+0.2 // [0.1, 0.2] or [0.30000000000000004]
	payload, _ := wire.EncodeGroup(g)
	if decoded := svc.decode(stream.Message{ID: "1-0", Values: map[string]any{stream.FieldGroup: string(payload), stream.FieldGroupID: g.GroupID}}); decoded.err != nil {
		t.Errorf("0.1 + 0.2 = 0.3 refused: %v", decoded.err)
	}
}
