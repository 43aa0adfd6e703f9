package reward

import (
	"math"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/setting"
)

func otcRewards(t *testing.T, c float64) Config {
	t.Helper()
	cfg := Config{CallCostForm: setting.Of("multiplicative"), CallCostC: setting.Of(c)}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The multiplicative form (OTC-PPO, arXiv 2504.14870): a right answer's
// outcome is 1·cos(m·π/(2m + c)) for m calls, no per-call cost, the other
// tool parts as before.
func TestMultiplicativeCallCost(t *testing.T) {
	c := otcRewards(t, 2)
	for _, row := range []struct {
		rc   rewardCase
		want float64
	}{
		{rewardCase{right: true, marked: true}, 1 + 0.1},
		{rewardCase{calls: []callStatus{callOKUsed}, right: true, marked: true}, math.Cos(math.Pi/4) + 0.1},
		{rewardCase{calls: []callStatus{callOKUnused, callOKUnused}, right: true, marked: true}, math.Cos(2*math.Pi/6) + 0.1},
		{rewardCase{calls: []callStatus{callFailed}, right: true, marked: true}, math.Cos(math.Pi/4) + 0.1 - 0.2},
		{rewardCase{calls: []callStatus{callOKUnused}, marked: true}, 0.1}, // a wrong answer's calls cost nothing
	} {
		tr := row.rc.trajectory()
		c.Score(&tr, rewardSpaceAnswer)
		if math.Abs(tr.Reward.Total-row.want) > 1e-9 || tr.Reward.Parts[PartCallCost] != 0 {
			t.Errorf("%v: total %v (call_cost %v), want %v and no call cost", row.rc, tr.Reward.Total, tr.Reward.Parts[PartCallCost], row.want)
		}
	}
}

// No sign reversal in the multiplicative form either, for any c: over the
// whole reward space the least right total is above the greatest wrong one
// (the factor's share and the tool parts together take at most
// max_tool_penalty from a right answer).
func TestMultiplicativeRightAlwaysAboveWrong(t *testing.T) {
	for _, cc := range []float64{0.1, 1, 2, 8} {
		c := otcRewards(t, cc)
		minRight, maxWrong := math.Inf(1), math.Inf(-1)
		for _, s := range rewardSpace(t, c) {
			if s.right {
				minRight = min(minRight, s.total())
			} else {
				maxWrong = max(maxWrong, s.total())
			}
		}
		if !(minRight > maxWrong) {
			t.Errorf("c %g: least right total %v is not above the greatest wrong %v", cc, minRight, maxWrong)
		}
	}
}

func TestMultiplicativeRefusals(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{CallCostForm: setting.Of("multiplicative")}, "rewards.call_cost_c: 0, want > 0 with call_cost_form: multiplicative"},
		{Config{CallCostForm: setting.Of("multiplicative"), CallCostC: setting.Of(-1.0)}, "rewards.call_cost_c: -1, want > 0"},
		{Config{CallCostForm: setting.Of("multiplicative"), CallCostC: setting.Of(2.0), CallCost: setting.Of(-0.1)}, "rewards.call_cost: the multiplicative call_cost_form replaces the per-call cost"},
		{Config{CallCostC: setting.Of(2.0)}, "rewards.call_cost_c: only the multiplicative call_cost_form uses it"},
		{Config{CallCostForm: setting.Of("exponential")}, `rewards.call_cost_form: "exponential", want additive or multiplicative`},
	} {
		if err := c.cfg.Normalize(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
