package advantage

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

// TestStepGroupGoldens: GiGPO's two levels by hand (drgrpo, ω 1, γ 1).
// Samples 0 and 1 make the same call and get the same result, so their
// second steps share a state; sample 2 answers directly; sample 3 makes
// another call (other tokens), so its second step is alone.
//
//	totals [1.0, 0.0, 1.1, 0.5], mean 0.65 → A^E [0.35, −0.65, 0.45, −0.15]
//	step 0 (the prompt, all four): returns = totals → A^S = A^E
//	step 1 of samples 0 and 1: returns [1.1, 0.1] → A^S [0.5, −0.5]
//	step 1 of sample 3: alone → A^S 0
func TestStepGroupGoldens(t *testing.T) {
	call := func(answer float64) []trajtest.Step {
		return []trajtest.Step{{Model: 2, Tool: 1, Reward: -0.1}, {Model: 1, Reward: answer}}
	}
	other := makeTraj(3, 4, 0.5, call(0.6)...)
	other.Tokens[other.PromptLen], other.Tokens[other.PromptLen+1] = 50, 51 // another call
	group := traj.NewGroup([]traj.Trajectory{
		makeTraj(0, 4, 1.0, call(1.1)...),
		makeTraj(1, 4, 0.0, call(0.1)...),
		makeTraj(2, 4, 1.1, trajtest.Step{Model: 1, Reward: 1.1}),
		other,
	})
	cfg := plainGRPO()
	cfg.Mode, cfg.Estimator, cfg.ProcessWeight = ModeStepGroup, EstimatorDrGRPO, 1
	recs, _ := mustCompute(t, group, cfg)
	checkTokens(t, "sample 0", recs[0].Advantages, []float64{0.7, 0.7, 0, 0.35 + 0.5})
	checkTokens(t, "sample 1", recs[1].Advantages, []float64{-1.3, -1.3, 0, -0.65 - 0.5})
	checkTokens(t, "sample 2", recs[2].Advantages, []float64{0.9})
	checkTokens(t, "sample 3", recs[3].Advantages, []float64{-0.3, -0.3, 0, -0.15})

	// γ 0.5: step 0's returns are r0 + 0.5 r1: [0.45, −0.05, 1.1, 0.2], mean 0.425.
	cfg.Gamma = 0.5
	recs, _ = mustCompute(t, group, cfg)
	checkTokens(t, "gamma 0.5 sample 0", recs[0].Advantages, []float64{0.35 + 0.025, 0.35 + 0.025, 0, 0.35 + 0.5})
	checkTokens(t, "gamma 0.5 sample 2", recs[2].Advantages, []float64{0.45 + 0.675})
}

// TestTurnsGoldens: MT-GRPO's separate normalisation by hand (drgrpo, w 1).
// The answer turns' rewards [1.1, 0.1, 1.1, 0.6] (mean 0.725) give Â^O
// [0.375, −0.625, 0.375, −0.125]; the call turns' rewards [−0.1, −0.3, −0.1]
// of samples 0, 1 and 3 (mean −1/6) give Â^T [1/15, −2/15, 1/15].
func TestTurnsGoldens(t *testing.T) {
	call := func(cost, answer float64) []trajtest.Step {
		return []trajtest.Step{{Model: 2, Tool: 1, Reward: cost}, {Model: 1, Reward: answer}}
	}
	group := traj.NewGroup([]traj.Trajectory{
		makeTraj(0, 4, 1.0, call(-0.1, 1.1)...),
		makeTraj(1, 4, -0.2, call(-0.3, 0.1)...),
		makeTraj(2, 4, 1.1, trajtest.Step{Model: 1, Reward: 1.1}),
		makeTraj(3, 4, 0.5, call(-0.1, 0.6)...),
	})
	cfg := plainGRPO()
	cfg.Mode, cfg.Estimator, cfg.ProcessWeight = ModeTurns, EstimatorDrGRPO, 1
	recs, _ := mustCompute(t, group, cfg)
	checkTokens(t, "sample 0", recs[0].Advantages, []float64{0.375 + 1.0/15, 0.375 + 1.0/15, 0, 0.375})
	checkTokens(t, "sample 1", recs[1].Advantages, []float64{-0.625 - 2.0/15, -0.625 - 2.0/15, 0, -0.625})
	checkTokens(t, "sample 2", recs[2].Advantages, []float64{0.375})
	checkTokens(t, "sample 3", recs[3].Advantages, []float64{-0.125 + 1.0/15, -0.125 + 1.0/15, 0, -0.125})
}

// bandit is the two-step problem of issue #26: call the tool (right with
// probability p; the call costs 0.1) or answer directly (right with
// probability q); a right answer pays 1 + 0.1 format, a wrong one the 0.1
// format. Calling is optimal where p·1.0 + (1−p)·0 > q·1.1 + (1−q)·0.1, that
// is p > q + 0.1. It samples a group of g at π(call) = ½ and says, for each
// sample, whether it called.
func bandit(rng *rand.Rand, g int, p, q float64) (traj.Group, []bool) {
	ts := make([]traj.Trajectory, g)
	called := make([]bool, g)
	for i := range ts {
		if called[i] = rng.Float64() < 0.5; called[i] {
			answer := 0.1
			if rng.Float64() < p {
				answer = 1.1
			}
			ts[i] = makeTraj(i, g, answer-0.1, trajtest.Step{Model: 2, Tool: 1, Reward: -0.1}, trajtest.Step{Model: 1, Reward: answer})
		} else {
			answer := 0.1
			if rng.Float64() < q {
				answer = 1.1
			}
			ts[i] = makeTraj(i, g, answer, trajtest.Step{Model: 1, Reward: answer})
			ts[i].Tokens[ts[i].PromptLen] = 20 // a different first token: the answer, not the call
		}
	}
	return traj.NewGroup(ts), called
}

// callGradient is the expected policy gradient on the logit of calling at
// the first decision (π(call) = ½): E[A_first · (1[call] − ½)], averaged
// over groups. Positive: the estimator pushes towards calling.
func callGradient(t *testing.T, cfg Config, p, q float64, groups int) float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	sum := 0.0
	for range groups {
		g, called := bandit(rng, 8, p, q)
		recs, _, err := Compute(&g, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			d := -0.5
			if called[i] {
				d = 0.5
			}
			sum += sampleAdvantage(&recs[i]) * d
		}
	}
	return sum / float64(groups*8)
}

// TestBanditEstimatorsFavour: which action each estimator's expected
// gradient favours at the first decision, on a grid of (p, q), against the
// optimum (call iff p > q + 0.1). The DeepSeekMath pooled process modes
// (process, and hybrid as the staged experiment ran it, grpo with process
// weight 0.5) subtract the pooled mean once per step, so the call's extra
// step is paid for; GRPO's std division turns the 0.1 cost into large
// advantages in all-right groups. The step-group credit without std
// (GiGPO with Dr.GRPO's scale) follows the optimum at every grid point.
func TestBanditEstimatorsFavour(t *testing.T) {
	if testing.Short() {
		t.Skip("Monte Carlo over 3,000 groups per point")
	}
	type arm struct {
		name string
		cfg  Config
	}
	mk := func(name string, m Mode, e Estimator, w float64) arm {
		c := plainGRPO()
		c.Mode, c.Estimator, c.ProcessWeight = m, e, w
		return arm{name, c}
	}
	arms := []arm{
		mk("outcome grpo", ModeOutcome, EstimatorGRPO, 1),
		mk("outcome drgrpo", ModeOutcome, EstimatorDrGRPO, 1),
		mk("process grpo", ModeProcess, EstimatorGRPO, 1),
		mk("hybrid grpo 0.5 (old staged)", ModeHybrid, EstimatorGRPO, 0.5),
		mk("stepgroup grpo", ModeStepGroup, EstimatorGRPO, 1),
		mk("stepgroup drgrpo", ModeStepGroup, EstimatorDrGRPO, 1),
		mk("turns drgrpo", ModeTurns, EstimatorDrGRPO, 1),
	}
	points := [][2]float64{{1, 0.68}, {1, 0.8}, {0.95, 0.7}, {0.9, 0.5}, {0.9, 0.9}, {0.8, 0.9}, {1, 0.97}, {0.6, 0.8}}
	wrong := map[string]int{}
	var table strings.Builder
	fmt.Fprintf(&table, "%-30s", "p, q (optimum)")
	for _, a := range arms {
		fmt.Fprintf(&table, " | %-14.14s", a.name)
	}
	for _, pt := range points {
		p, q := pt[0], pt[1]
		optimum := p > q+0.1
		want := "direct"
		if optimum {
			want = "call"
		}
		fmt.Fprintf(&table, "\n%-30s", fmt.Sprintf("%.2f, %.2f (%s)", p, q, want))
		for _, a := range arms {
			grad := callGradient(t, a.cfg, p, q, 3000)
			if (grad > 0) != optimum {
				wrong[a.name]++
			}
			fmt.Fprintf(&table, " | %+14.4f", grad)
		}
	}
	t.Logf("expected gradient on the call logit (positive: towards calling):\n%s", table.String())
	for _, a := range []string{"stepgroup drgrpo", "outcome drgrpo"} {
		if wrong[a] != 0 {
			t.Errorf("%s favours the wrong action at %d of %d points", a, wrong[a], len(points))
		}
	}
	for _, a := range []string{"process grpo", "hybrid grpo 0.5 (old staged)"} {
		if wrong[a] == 0 {
			t.Errorf("%s favours the optimum everywhere; the test's premise (issue #26) does not hold", a)
		}
	}
	t.Logf("points where each favours the wrong action: %v", wrong)
}

// stagedGroup is a random group scored as the staged reward scores (issue
// #26's property): each sample makes 0–3 calls, each costing 0.1 and 0.2
// more when it fails, then answers; a right answer pays 1 + 0.1 format, a
// wrong one at most the format, and the tool parts of a right answer take
// at most 0.8 (max_tool_penalty), so a right answer totals ≥ 0.2 and a
// wrong one ≤ 0.1. Calls are drawn from a few tokens, so some samples share
// states after their first call.
func stagedGroup(rng *rand.Rand, g int) (traj.Group, []bool) {
	ts := make([]traj.Trajectory, g)
	right := make([]bool, g)
	for i := range ts {
		calls := rng.IntN(4)
		var steps []trajtest.Step
		toolSum := 0.0
		for range calls {
			r := -0.1
			if rng.Float64() < 0.3 {
				r -= 0.2
			}
			toolSum += r
			steps = append(steps, trajtest.Step{Model: 1, Tool: 1, Reward: r})
		}
		right[i] = rng.Float64() < 0.5
		final := 0.0
		if rng.Float64() < 0.8 {
			final = 0.1 // format
		}
		if right[i] {
			final = 1.1
			if toolSum < -0.8 {
				final += -0.8 - toolSum // penalty_clip
			}
		}
		steps = append(steps, trajtest.Step{Model: 1, Reward: final})
		total := final + toolSum
		ts[i] = makeTraj(i, g, total, steps...)
		for k := range calls { // the call's token: one of two, so states repeat
			ts[i].Tokens[ts[i].PromptLen+2*k] = int32(30 + rng.IntN(2))
		}
	}
	return traj.NewGroup(ts), right
}

// TestPropertyRightAnswerAboveWrong: at the first decision (the state all
// samples share), no right answer's advantage is at or below a wrong
// answer's in the same group, for the outcome, step-group and turns credits with
// every estimator, over random staged groups. The DeepSeekMath pooled
// process credit (process, hybrid) breaks it: a right answer with more
// calls (more steps) can fall below a wrong one (counted, and required to
// happen, so the test shows the difference it guards).
func TestPropertyRightAnswerAboveWrong(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	broken := map[string]int{}
	for range 2000 {
		g, right := stagedGroup(rng, 8)
		for _, m := range []Mode{ModeOutcome, ModeStepGroup, ModeProcess, ModeHybrid, ModeTurns} {
			for _, e := range []Estimator{EstimatorGRPO, EstimatorDrGRPO, EstimatorRLOO} {
				cfg := plainGRPO()
				cfg.Mode, cfg.Estimator, cfg.ProcessWeight = m, e, 0.5
				recs, _, err := Compute(&g, cfg)
				if err != nil {
					t.Fatal(err)
				}
				for i := range recs {
					for j := range recs {
						if right[i] && !right[j] && sampleAdvantage(&recs[i]) <= sampleAdvantage(&recs[j]) {
							broken[string(m)+" "+string(e)]++
						}
					}
				}
			}
		}
	}
	for _, m := range []Mode{ModeOutcome, ModeStepGroup, ModeTurns} {
		for _, e := range []Estimator{EstimatorGRPO, EstimatorDrGRPO, EstimatorRLOO} {
			if n := broken[string(m)+" "+string(e)]; n > 0 {
				t.Errorf("%s %s: %d pairs where a right answer's advantage is at or below a wrong one's", m, e, n)
			}
		}
	}
	if broken["process grpo"] == 0 || broken["hybrid grpo"] == 0 {
		t.Errorf("the pooled process credit never inverted a pair (%v): the property's counterexample is gone", broken)
	}
	t.Logf("inverted pairs per credit over 2,000 groups: %v", broken)
}

// TestPropertyKeepOutcomeSign: with KeepOutcomeSign, over random staged
// groups, no token of a right answer has a negative advantage and no token
// of a wrong one a positive advantage in a group that holds both, in every
// mode with every estimator; groups of one kind keep the advantages computed
// without it. Without it, right answers with costly calls do go below 0
// (counted, and required to happen: the guard has something to do).
func TestPropertyKeepOutcomeSign(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	pushedDown := 0
	for range 1000 {
		g, right := stagedGroup(rng, 8)
		mixed := slices.Contains(right, true) && slices.Contains(right, false)
		for i := range g.Trajectories {
			o := 0.0
			if right[i] {
				o = 1
			}
			g.Trajectories[i].Reward.Parts = map[string]float64{"outcome": o, "others": g.Trajectories[i].Reward.Total - o}
		}
		for _, m := range []Mode{ModeOutcome, ModeStepGroup, ModeProcess, ModeHybrid, ModeTurns} {
			for _, e := range []Estimator{EstimatorGRPO, EstimatorDrGRPO, EstimatorRLOO} {
				cfg := plainGRPO()
				cfg.Mode, cfg.Estimator, cfg.ProcessWeight = m, e, 0.5
				plain := copyAdvantages(mustCompute(t, g, cfg))
				cfg.KeepOutcomeSign = true
				kept, _ := mustCompute(t, g, cfg)
				for i := range kept {
					for j, a := range kept[i].Advantages {
						p := plain[i][j]
						switch {
						case !mixed && a != p:
							t.Fatalf("%s %s: a group of one kind changed: token %d of sample %d %g, without the option %g", m, e, j, i, a, p)
						case mixed && right[i] && a < 0, mixed && !right[i] && a > 0:
							t.Fatalf("%s %s: sample %d (right %v) token %d has advantage %g", m, e, i, right[i], j, a)
						case mixed && a != p && a != 0:
							t.Fatalf("%s %s: sample %d token %d: %g without the option became %g, not 0", m, e, i, j, p, a)
						case mixed && a != p && ((right[i] && p >= 0) || (!right[i] && p <= 0)):
							t.Fatalf("%s %s: sample %d (right %v) token %d: %g already had the answer's sign and became %g", m, e, i, right[i], j, p, a)
						}
						if mixed && right[i] && p < 0 {
							pushedDown++
						}
					}
				}
			}
		}
	}
	if pushedDown == 0 {
		t.Fatal("no right answer's token went below 0 without the option: the property tests nothing")
	}
	t.Logf("right answers' tokens below 0 without the option: %d", pushedDown)
}

// copyAdvantages copies records' advantages (Compute's memory is reused).
func copyAdvantages(recs []traj.AdvantageRecord, _ Stats) [][]float32 {
	out := make([][]float32, len(recs))
	for i := range recs {
		out[i] = slices.Clone(recs[i].Advantages)
	}
	return out
}

// TestKeepOutcomeSignNeedsOutcomeParts: a group whose trajectories carry no
// outcome part (v1 data, rewards scored elsewhere) has no verdict to keep,
// and keeps the advantages computed without the option, even when one
// trajectory has the part and the others do not.
func TestKeepOutcomeSignNeedsOutcomeParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	g, right := stagedGroup(rng, 8)
	for !slices.Contains(right, true) || !slices.Contains(right, false) {
		g, right = stagedGroup(rng, 8)
	}
	cfg := plainGRPO()
	cfg.Mode, cfg.Estimator = ModeStepGroup, EstimatorDrGRPO
	plain := copyAdvantages(mustCompute(t, g, cfg))
	cfg.KeepOutcomeSign = true
	g.Trajectories[0].Reward.Parts = map[string]float64{"outcome": 1, "others": g.Trajectories[0].Reward.Total - 1}
	kept, _ := mustCompute(t, g, cfg)
	for i := range kept {
		if !slices.Equal(kept[i].Advantages, plain[i]) {
			t.Fatalf("sample %d: advantages changed without outcome parts on every trajectory: %v, want %v", i, kept[i].Advantages, plain[i])
		}
	}
}
