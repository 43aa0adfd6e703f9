package advantage

import (
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

const tol = 1e-6

func near(a, b float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }

// fixture is the advantage tests' group of size g of job/p: policy version
// 5, sampling temperature 0.7 (trajtest's layout: a 2-token prompt,
// logprob −1 on every sampled token).
func fixture(g int) trajtest.Options {
	return trajtest.Options{Size: g, PolicyVersion: 5, Temperature: trajtest.Temperature(0.7)}
}

// makeTraj is sample index of fixture(groupSize) with the given steps and
// reward total.
func makeTraj(index, groupSize int, total float64, steps ...trajtest.Step) traj.Trajectory {
	o := fixture(groupSize)
	o.Steps = steps
	o.Sample = func(_ int, t *traj.Trajectory) { t.Reward.Total = total }
	return trajtest.Trajectory(o, index)
}

func mustCompute(t *testing.T, g traj.Group, cfg Config) ([]traj.AdvantageRecord, Stats) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	recs, st, err := Compute(&g, cfg)
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	for i := range recs {
		if err := recs[i].Validate(); err != nil {
			t.Fatalf("record %d invalid: %v", i, err)
		}
	}
	return recs, st
}

// checkTokens compares a record's per-token advantages with want (one value
// per response token).
func checkTokens(t *testing.T, name string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d advantages, want %d", name, len(got), len(want))
	}
	for j := range want {
		if !near(float64(got[j]), want[j]) {
			t.Errorf("%s: advantage[%d] = %.9g, want %.9g", name, j, got[j], want[j])
		}
	}
}

// Goldens computed by hand (python3 with math.sqrt for the standard
// deviations): rewards [1, 0, 0] have mean 1/3 and unbiased std √(1/3).
func TestOutcomeGoldens(t *testing.T) {
	group := traj.NewGroup([]traj.Trajectory{
		makeTraj(0, 3, 1, trajtest.Step{Model: 2, Tool: 1}, trajtest.Step{Model: 1}),
		makeTraj(1, 3, 0, trajtest.Step{Model: 1}),
		makeTraj(2, 3, 0, trajtest.Step{Model: 2}),
	})
	cases := []struct {
		est  Estimator
		a, b float64 // advantage of the rewarded sample and of the others
	}{
		// (1 − 1/3) / (√(1/3) + 1e-6) and (0 − 1/3) / (√(1/3) + 1e-6)
		{EstimatorGRPO, 1.1546985383827155, -0.5773492691913577},
		{EstimatorDrGRPO, 2.0 / 3, -1.0 / 3},
		// 1 − (0+0)/2 and 0 − (1+0)/2
		{EstimatorRLOO, 1, -0.5},
	}
	for _, c := range cases {
		cfg := plainGRPO()
		cfg.Estimator = c.est
		recs, st := mustCompute(t, group, cfg)
		checkTokens(t, string(c.est)+" sample 0", recs[0].Advantages, []float64{c.a, c.a, 0, c.a})
		checkTokens(t, string(c.est)+" sample 1", recs[1].Advantages, []float64{c.b})
		checkTokens(t, string(c.est)+" sample 2", recs[2].Advantages, []float64{c.b, c.b})
		if st.ZeroVariance != 0 || st.Records != 3 || st.Tokens != 7 {
			t.Errorf("%s stats = %+v", c.est, st)
		}
		if recs[0].Mode != "outcome" || recs[0].Estimator != string(c.est) {
			t.Errorf("record labels %q %q", recs[0].Mode, recs[0].Estimator)
		}
	}
}

func TestGroupOfOneHasZeroAdvantage(t *testing.T) {
	for _, mode := range []Mode{ModeOutcome, ModeProcess, ModeHybrid, ModeStepGroup, ModeTurns} {
		for _, est := range []Estimator{EstimatorGRPO, EstimatorDrGRPO, EstimatorRLOO} {
			cfg := plainGRPO()
			cfg.Mode, cfg.Estimator = mode, est
			g := traj.NewGroup([]traj.Trajectory{makeTraj(0, 1, 3, trajtest.Step{Model: 3, Reward: 2})})
			recs, st := mustCompute(t, g, cfg)
			checkTokens(t, string(mode)+"/"+string(est), recs[0].Advantages, []float64{0, 0, 0})
			if st.ZeroVariance != 1 {
				t.Errorf("%s/%s: group of one not counted as zero variance", mode, est)
			}
		}
	}
}

// Process golden: sample 0 has steps with rewards 1 and 0 (a tool segment
// between them), sample 1 one step with reward 0. The pooled step rewards
// [1, 0, 0] normalise to [1.1546985, −0.5773493, −0.5773493]; a token's
// advantage sums its own step's and all later steps' normalised rewards.
func TestProcessGoldens(t *testing.T) {
	group := traj.NewGroup([]traj.Trajectory{
		makeTraj(0, 2, 1, trajtest.Step{Model: 2, Tool: 2, Reward: 1}, trajtest.Step{Model: 1, Reward: 0}),
		makeTraj(1, 2, 0, trajtest.Step{Model: 2, Reward: 0}),
	})
	hi, lo := 1.1546985383827155, -0.5773492691913577
	cfg := plainGRPO()
	cfg.Mode = ModeProcess
	recs, _ := mustCompute(t, group, cfg)
	checkTokens(t, "gamma 1 sample 0", recs[0].Advantages, []float64{hi + lo, hi + lo, 0, 0, lo})
	checkTokens(t, "gamma 1 sample 1", recs[1].Advantages, []float64{lo, lo})

	cfg.Gamma = 0.5 // 1.1546985 + 0.5 × (−0.5773493) = 0.8660239
	recs, _ = mustCompute(t, group, cfg)
	checkTokens(t, "gamma 0.5 sample 0", recs[0].Advantages, []float64{0.8660239037870368, 0.8660239037870368, 0, 0, lo})

	cfg.Gamma, cfg.Estimator = 1, EstimatorDrGRPO // [2/3, −1/3, −1/3]
	recs, _ = mustCompute(t, group, cfg)
	checkTokens(t, "drgrpo sample 0", recs[0].Advantages, []float64{1.0 / 3, 1.0 / 3, 0, 0, -1.0 / 3})

	cfg.Estimator = EstimatorRLOO // [1, −0.5, −0.5]
	recs, _ = mustCompute(t, group, cfg)
	checkTokens(t, "rloo sample 0", recs[0].Advantages, []float64{0.5, 0.5, 0, 0, -0.5})
	checkTokens(t, "rloo sample 1", recs[1].Advantages, []float64{-0.5, -0.5})

	// Hybrid with weight 0.5: outcome rewards [1, 0] give ±0.7071058
	// ((±0.5) / (√0.5 + 1e-6)), plus half the process advantage above.
	cfg = plainGRPO()
	cfg.Mode, cfg.ProcessWeight = ModeHybrid, 0.5
	recs, _ = mustCompute(t, group, cfg)
	checkTokens(t, "hybrid sample 0", recs[0].Advantages, []float64{0.9957804157836405, 0.9957804157836405, 0, 0, 0.4184311465922828})
	checkTokens(t, "hybrid sample 1", recs[1].Advantages, []float64{-0.9957804157836405, -0.9957804157836405})
}

func TestProcessNeedsStepRewards(t *testing.T) {
	tr := makeTraj(0, 1, 1, trajtest.Step{Model: 2})
	tr.StepRewards = nil
	g := traj.NewGroup([]traj.Trajectory{tr})
	cfg := plainGRPO()
	cfg.Mode = ModeProcess
	if _, _, err := Compute(&g, cfg); err == nil {
		t.Fatal("process mode accepted a trajectory without step rewards")
	}
}

func TestKLGoldens(t *testing.T) {
	cases := []struct {
		e          KLEstimator
		logp, ref  float64
		want       float64
		commentary string
	}{
		{KLK1, -1, -2, 1, "d"},
		{KLK2, -1, -2, 0.5, "d²/2"},
		{KLK3, -1, -2, 0.36787944117144233, "e^−1 + 1 − 1"},
		{KLK3, -2, -1, math.E - 2, "e^1 − 1 − 1"},
		{KLK1, -31, -1, -20, "log-ratio clamped to −20"},
		{KLK2, -1, -31, 200, "clamped d = 20: 20²/2"},
		{KLK3, -31, -1, 10, "e^20 − 21 clamped to 10"},
		{KLK3, -1, -31, 10, "e^−20 + 19 clamped to 10"},
		{KLNone, -1, -2, 0, "none"},
	}
	for _, c := range cases {
		if got := KLTerm(c.e, c.logp, c.ref); !near(got, c.want) {
			t.Errorf("%s(%g, %g) = %g, want %g (%s)", c.e, c.logp, c.ref, got, c.want, c.commentary)
		}
	}
}

// KL folded into the reward: both samples have reward 1; sample 0 has two
// tokens with logp −1 against ref −2 (k1 = 1 each), sample 1 matches the
// reference. With coefficient 0.1 the rewards become [0.8, 1], and Dr.GRPO
// gives [−0.1, 0.1].
func TestKLFoldGolden(t *testing.T) {
	a := makeTraj(0, 2, 1, trajtest.Step{Model: 2, Tool: 1})
	a.RefLogprobs = []float32{-2, -2, 0}
	b := makeTraj(1, 2, 1, trajtest.Step{Model: 1})
	b.RefLogprobs = []float32{-1}
	g := traj.NewGroup([]traj.Trajectory{a, b})
	cfg := plainGRPO()
	cfg.Estimator, cfg.KL, cfg.KLCoef = EstimatorDrGRPO, KLK1, 0.1
	recs, st := mustCompute(t, g, cfg)
	checkTokens(t, "sample 0", recs[0].Advantages, []float64{-0.1, -0.1, 0})
	checkTokens(t, "sample 1", recs[1].Advantages, []float64{0.1})
	checkTokens(t, "kl 0", recs[0].KL, []float64{1, 1, 0})
	if recs[0].KLEstimator != "k1" {
		t.Errorf("kl estimator %q", recs[0].KLEstimator)
	}
	if st.ZeroVariance != 1 || !recs[0].ZeroVariance {
		t.Errorf("equal task rewards not flagged as zero variance: %+v", st)
	}

	// Process mode folds each step's KL into its own step reward: steps
	// [1 − 0.2, 0] → Dr.GRPO [0.4, −0.4].
	a.StepRewards, b.StepRewards = []float64{1}, []float64{0}
	g = traj.NewGroup([]traj.Trajectory{a, b})
	cfg.Mode = ModeProcess
	recs, _ = mustCompute(t, g, cfg)
	checkTokens(t, "process sample 0", recs[0].Advantages, []float64{0.4, 0.4, 0})

	b.RefLogprobs = nil
	g = traj.NewGroup([]traj.Trajectory{a, b})
	if _, _, err := Compute(&g, cfg); err == nil {
		t.Error("KL fold accepted a trajectory without ref_logprobs")
	}
}

func TestZeroVarianceAndStaleness(t *testing.T) {
	g := traj.NewGroup([]traj.Trajectory{makeTraj(0, 2, 1, trajtest.Step{Model: 1}), makeTraj(1, 2, 1, trajtest.Step{Model: 1})})
	cfg := plainGRPO()
	recs, st := mustCompute(t, g, cfg)
	if len(recs) != 2 || st.ZeroVariance != 1 || st.DroppedZero != 0 || !recs[1].ZeroVariance {
		t.Errorf("kept zero-variance group: %d records, %+v", len(recs), st)
	}
	cfg.DropZeroVariance = true
	if recs, st = mustCompute(t, g, cfg); len(recs) != 0 || st.DroppedZero != 1 {
		t.Errorf("dropped zero-variance group: %d records, %+v", len(recs), st)
	}

	cfg = plainGRPO()
	cfg.MaxStaleness, cfg.CurrentPolicyVersion = 2, 7 // group version 5: lag 2, allowed
	if recs, st = mustCompute(t, g, cfg); len(recs) != 2 || st.Stale != 0 {
		t.Errorf("lag 2 of 2: %d records, %+v", len(recs), st)
	}
	cfg.CurrentPolicyVersion = 8 // lag 3
	if recs, st = mustCompute(t, g, cfg); len(recs) != 0 || st.Stale != 1 || st.DroppedStale != 1 {
		t.Errorf("lag 3 of 2: %d records, %+v", len(recs), st)
	}
	cfg.FlagStale = true
	if recs, st = mustCompute(t, g, cfg); len(recs) != 2 || !recs[0].Stale || st.DroppedStale != 0 {
		t.Errorf("flag stale: %d records, %+v", len(recs), st)
	}
}

func allConfigs() []Config {
	var out []Config
	for _, mode := range []Mode{ModeOutcome, ModeProcess, ModeHybrid, ModeStepGroup, ModeTurns} {
		for _, est := range []Estimator{EstimatorGRPO, EstimatorDrGRPO, EstimatorRLOO} {
			for _, kl := range []KLEstimator{KLNone, KLK1, KLK2, KLK3} {
				cfg := plainGRPO()
				cfg.Mode, cfg.Estimator, cfg.KL, cfg.ProcessWeight = mode, est, kl, 0.7
				out = append(out, cfg)
			}
		}
	}
	return out
}

// sampleAdvantage is the advantage of a trajectory's first sampled token.
func sampleAdvantage(r *traj.AdvantageRecord) float64 {
	for j, m := range r.LossMask {
		if m == 1 {
			return float64(r.Advantages[j])
		}
	}
	return 0
}

func TestPropertyOutcomeSumsToZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 300; iter++ {
		g := *trajtest.Random(rng, fixture(1+rng.IntN(8)), trajtest.Shape{})
		for _, est := range []Estimator{EstimatorGRPO, EstimatorDrGRPO, EstimatorRLOO} {
			cfg := plainGRPO()
			cfg.Estimator = est
			recs, _ := mustCompute(t, g, cfg)
			var sum float64
			for i := range recs {
				sum += sampleAdvantage(&recs[i])
			}
			if math.Abs(sum) > 1e-4 {
				t.Fatalf("iter %d %s: advantages sum to %g", iter, est, sum)
			}
		}
	}
}

// Process advantages are suffix sums, so each step's normalised reward is
// recovered as A_k − γ A_{k+1}; with a mean baseline they sum to zero.
func TestPropertyProcessStepRewardsSumToZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 300; iter++ {
		g := *trajtest.Random(rng, fixture(1+rng.IntN(8)), trajtest.Shape{})
		cfg := plainGRPO()
		cfg.Mode, cfg.Gamma = ModeProcess, 0.25+0.75*rng.Float64()
		recs, _ := mustCompute(t, g, cfg)
		var sum float64
		for i := range recs {
			var steps []float64
			for _, s := range recs[i].Segments {
				if s.Kind == traj.SegmentModel {
					steps = append(steps, float64(recs[i].Advantages[s.Start]))
				}
			}
			for k := range steps {
				next := 0.0
				if k+1 < len(steps) {
					next = steps[k+1]
				}
				sum += steps[k] - cfg.Gamma*next
			}
		}
		if math.Abs(sum) > 1e-4 {
			t.Fatalf("iter %d: normalised step rewards sum to %g", iter, sum)
		}
	}
}

func shiftScale(g traj.Group, shift, scale float64) traj.Group {
	out := g
	out.Trajectories = make([]traj.Trajectory, len(g.Trajectories))
	for i, tr := range g.Trajectories {
		tr.Reward.Total = tr.Reward.Total*scale + shift
		steps := make([]float64, len(tr.StepRewards))
		for k, r := range tr.StepRewards {
			steps[k] = r*scale + shift
		}
		tr.StepRewards = steps
		out.Trajectories[i] = tr
	}
	return out
}

func TestPropertyShiftAndScaleInvariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := 0; iter < 100; iter++ {
		g := *trajtest.Random(rng, fixture(2+rng.IntN(7)), trajtest.Shape{})
		shift := rng.NormFloat64() * 10
		scale := 0.1 + 10*rng.Float64()
		for _, cfg := range allConfigs() {
			base, _ := mustCompute(t, g, cfg)
			shifted, _ := mustCompute(t, shiftScale(g, shift, 1), cfg)
			// A per-step shift is a reward per step taken: the step-group
			// returns (sums of the steps to come) rightly move with it,
			// where the pooled process credit cancels it.
			for i := range base {
				if cfg.Mode == ModeStepGroup {
					break
				}
				for j := range base[i].Advantages {
					if a, b := base[i].Advantages[j], shifted[i].Advantages[j]; math.Abs(float64(a-b)) > 1e-3 {
						t.Fatalf("iter %d %s/%s: shift %g changed advantage [%d][%d] %g → %g", iter, cfg.Mode, cfg.Estimator, shift, i, j, a, b)
					}
				}
			}
			if cfg.Estimator != EstimatorGRPO || cfg.Mode == ModeHybrid {
				continue // only the std-normalised forms are scale-invariant
			}
			scaled, _ := mustCompute(t, shiftScale(g, 0, scale), cfg)
			for i := range base {
				for j := range base[i].Advantages {
					if a, b := base[i].Advantages[j], scaled[i].Advantages[j]; math.Abs(float64(a-b)) > 1e-3 {
						t.Fatalf("iter %d %s: scale %g changed advantage [%d][%d] %g → %g", iter, cfg.Mode, scale, i, j, a, b)
					}
				}
			}
		}
	}
}

func TestPropertyMaskedTokensGetZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for iter := 0; iter < 100; iter++ {
		g := *trajtest.Random(rng, fixture(1+rng.IntN(8)), trajtest.Shape{})
		for _, cfg := range allConfigs() {
			if cfg.KL != KLNone && rng.IntN(2) == 0 {
				cfg.KLCoef = rng.Float64()
			}
			recs, _ := mustCompute(t, g, cfg)
			for i := range recs {
				for j, m := range recs[i].LossMask {
					if m == 0 && (recs[i].Advantages[j] != 0 || (recs[i].KL != nil && recs[i].KL[j] != 0)) {
						t.Fatalf("iter %d %+v: injected token [%d][%d] has advantage %g", iter, cfg, i, j, recs[i].Advantages[j])
					}
				}
			}
		}
	}
}

// The worked example of docs/advantage.md, from its group file: hybrid,
// weight 0.5, k3. The same group as toolrl wrote it before schema v2 (no
// temperature) gives the same advantages, through traj's decoder and the
// service's; its records are v2 without temperature.
func TestDocsWorkedExample(t *testing.T) {
	for _, c := range []struct {
		file        string
		temperature *float64
	}{
		{"testdata/calc-demo-group.json", new(float64)},
		{"testdata/calc-demo-group-v1.json", nil},
	} {
		if c.temperature != nil {
			*c.temperature = 1
		}
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		g, err := wire.DecodeGroup(data)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		// The example is data the service and offline accept: each total is
		// the sum of its parts and of its step rewards, as the rollout writes.
		for i := range g.Trajectories {
			if err := g.Trajectories[i].ValidateRewardSums(); err != nil {
				t.Errorf("%s: %v", c.file, err)
			}
		}
		arrays, raws, err := wire.DecodeGroupArrays(data)
		if err != nil || !reflect.DeepEqual(*arrays, g) {
			t.Fatalf("%s: the service's decoder: %v", c.file, err)
		}
		cfg := plainGRPO()
		cfg.Mode, cfg.ProcessWeight, cfg.KL = ModeHybrid, 0.5, KLK3
		recs, _ := mustCompute(t, g, cfg)
		// By hand (docs/advantage.md): 0.7071058 + 0.5 × 1.127466 and
		// 0.7071058 + 0.5 × 1.465706; k3 of d = 0.25 and d = 0.5.
		checkTokens(t, "sample 0", recs[0].Advantages, []float64{1.270839, 1.270839, 0, 0, 1.439959})
		checkTokens(t, "kl 0", recs[0].KL, []float64{0.028800784, 0, 0, 0, 0.10653066})
		for i := range recs {
			if recs[i].Schema != traj.AdvantageSchema || !reflect.DeepEqual(recs[i].Temperature, c.temperature) {
				t.Errorf("%s record %d: schema %s temperature %v, want %s and %v", c.file, i, recs[i].Schema, recs[i].Temperature, traj.AdvantageSchema, c.temperature)
			}
			want, _ := wire.EncodeRecord(&recs[i])
			got, err := wire.AppendRecord(nil, &recs[i], &raws[i])
			if err != nil || string(got) != string(want) {
				t.Errorf("%s record %d: the service's encoder: %v\n got %s\nwant %s", c.file, i, err, got, want)
			}
		}
	}
}

// TestScratchReuse computes groups of different sizes (larger, smaller,
// larger again; with and without a KL estimator) in one Scratch and checks
// each result against Compute with fresh memory: nothing of an earlier
// group shows through (advantages and KL of injected tokens stay 0, spans
// and records are whole).
func TestScratchReuse(t *testing.T) {
	var sc Scratch
	for i, shape := range []struct{ g, stepLen int }{{8, 64}, {4, 16}, {8, 8}, {6, 96}, {2, 4}} {
		g := trajtest.Synthetic("scratch", i, shape.g, shape.stepLen)
		for _, kl := range []KLEstimator{KLK3, KLNone} {
			cfg := plainGRPO()
			cfg.Mode, cfg.KL = ModeHybrid, kl
			want, wantSt, err := Compute(g, cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, st, err := sc.Compute(g, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) || st != wantSt {
				t.Fatalf("group %d (G=%d, step %d, kl %s): reused scratch gives other records than fresh memory", i, shape.g, shape.stepLen, kl)
			}
		}
	}
}

// plainGRPO is DefaultConfig with plain GRPO's credit (outcome mode, GRPO
// estimator, no sign keeping): the configuration the goldens of this
// package were written against, whatever the defaults are.
func plainGRPO() Config {
	c := DefaultConfig()
	c.Mode, c.Estimator, c.KeepOutcomeSign = ModeOutcome, EstimatorGRPO, false
	return c
}
