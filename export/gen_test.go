package export

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

// genShape is what the export tests draw: up to 4 turns of up to 60 tokens,
// tool results of up to 12, prompts of up to 40, token ids below 32000, and
// trajtest's codec corners (empty responses, unparsed and failed calls,
// optional reference logprobs, reward parts and step rewards, -0 logprobs).
var genShape = trajtest.Shape{Model: [2]int{1, 60}, Tool: [2]int{1, 12}, Prompt: [2]int{1, 40}, Vocab: 32000, Corners: true}

// genAdvantage derives a valid advantage record from a trajectory: hybrid
// GRPO, one advantage, k3 KL where it has reference logprobs, now and then
// flagged zero-variance or stale, or without segments.
func genAdvantage(rng *rand.Rand, t traj.Trajectory) traj.AdvantageRecord {
	a := trajtest.Record(t, float32(rng.NormFloat64()))
	a.Mode, a.ZeroVariance, a.Stale = "hybrid", rng.IntN(10) == 0, rng.IntN(10) == 0
	if t.RefLogprobs != nil {
		a.KLEstimator = "k3"
		a.KL = make([]float32, len(t.LossMask))
		for i := range a.KL {
			d := float64(t.Logprobs[i] - t.RefLogprobs[i])
			a.KL[i] = float32(math.Exp(-d) + d - 1)
		}
	}
	if rng.IntN(4) == 0 {
		a.Segments = nil
	}
	return a
}

// genRecords returns n trajectories of job-1 in groups of 4 drawn with
// genShape, and their advantage records. Iterations (0, 3, 0, 1, 12) and
// temperatures (1, 0.7, greedy 0, unset) cycle with the prompt.
func genRecords(seed uint64, n int) ([]traj.Trajectory, []traj.AdvantageRecord) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var ts []traj.Trajectory
	for p := 0; len(ts) < n; p++ {
		o := trajtest.Options{Job: "job-1", Prompt: fmt.Sprintf("p%04d", p), Iteration: []int{0, 3, 0, 1, 12}[p%5], Size: 4,
			Model: "calc-tiny", Sample: func(_ int, t *traj.Trajectory) { t.Model.Hash = "sha256:0123abcd" }}
		if temps := []float64{1, 0.7, 0}; p%4 < len(temps) {
			o.Temperature = &temps[p%4]
		}
		ts = append(ts, trajtest.Random(rng, o, genShape).Trajectories...)
	}
	ts = ts[:n]
	as := make([]traj.AdvantageRecord, 0, n)
	for _, t := range ts {
		as = append(as, genAdvantage(rng, t))
	}
	return ts, as
}
