package export

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/toolrl/toolrl/traj"
)

// genTrajectory returns a valid random trajectory: 1-4 model turns, tool
// calls between them (some failing, some unparsed), optional reference
// logprobs, reward parts and step rewards, and now and then an empty response.
func genTrajectory(rng *rand.Rand, job string, prompt, sample, groupSize int) traj.Trajectory {
	promptID := fmt.Sprintf("p%04d", prompt)
	// Iteration by prompt too (not from rng): plain rollouts (0, omitted in
	// JSON) and later iterations of the closed loop.
	iteration := []int{0, 3, 0, 1, 12}[prompt%5]
	t := traj.Trajectory{
		Schema: traj.TrajectorySchema, ID: traj.TrajectoryID(job, promptID, iteration, sample), JobID: job, PromptID: promptID,
		Iteration: iteration, GroupID: traj.GroupID(job, promptID, iteration), GroupSize: groupSize, SampleIndex: sample,
		PolicyVersion: rng.Int64N(100), Seed: rng.Uint64(), Model: traj.ModelRef{Name: "calc-tiny", Hash: "sha256:0123abcd"},
		FinishReason: []traj.FinishReason{traj.FinishStop, traj.FinishLength, traj.FinishMaxTurns}[rng.IntN(3)],
	}
	// Temperature by prompt (not from rng, so that the rest stays as it was):
	// sampled, sharpened, greedy (an explicit 0) and unknown (nil).
	if temps := []float64{1, 0.7, 0}; prompt%4 < len(temps) {
		t.Temperature = &temps[prompt%4]
	}
	promptLen := 1 + rng.IntN(40)
	for range promptLen {
		t.Tokens = append(t.Tokens, rng.Int32N(32000))
	}
	t.PromptLen = promptLen
	withRef := rng.IntN(2) == 0
	turns := 1 + rng.IntN(4)
	if rng.IntN(20) == 0 {
		turns = 0 // empty response
		t.LossMask, t.Logprobs, t.Segments = traj.Mask{}, []float32{}, []traj.Segment{}
	}
	pos := 0
	for turn := range turns {
		n := 1 + rng.IntN(60)
		seg := traj.Segment{Kind: traj.SegmentModel, Turn: turn, Start: pos, End: pos + n, Text: fmt.Sprintf("turn %d → ü %q", turn, "x")}
		for range n {
			t.Tokens = append(t.Tokens, rng.Int32N(32000))
			t.LossMask = append(t.LossMask, 1)
			lp := float32(-rng.ExpFloat64())
			if rng.IntN(50) == 0 {
				lp = float32(math.Copysign(0, -1)) // -0 is a valid logprob
			}
			t.Logprobs = append(t.Logprobs, lp)
		}
		pos += n
		last := turn == turns-1
		if !last {
			call := &traj.ToolCall{Name: "calculator", Raw: "[CALC: 2 * 3]", Arguments: json.RawMessage(`{"expression": "2 * 3"}`)}
			if rng.IntN(5) == 0 {
				call = &traj.ToolCall{Name: "calculator", Raw: "[CALC: 2 *", ParseError: "unterminated: no closing ]"}
			}
			seg.Call = call
		}
		t.Segments = append(t.Segments, seg)
		if !last {
			m := 1 + rng.IntN(12)
			res := &traj.ToolResult{OK: true, Content: "6", LatencyMS: rng.Float64() * 3}
			if seg.Call.ParseError != "" {
				res = &traj.ToolResult{ErrorClass: "invalid_args", Error: "unterminated call", Content: "error: unterminated"}
			} else if rng.IntN(4) == 0 {
				res = &traj.ToolResult{ErrorClass: "timeout", Error: "deadline exceeded after 2s", Content: "error: timeout", Truncated: true}
			}
			t.Segments = append(t.Segments, traj.Segment{Kind: traj.SegmentTool, Turn: turn, Start: pos, End: pos + m, Text: " = 6", Call: seg.Call, Result: res})
			for range m {
				t.Tokens = append(t.Tokens, rng.Int32N(32000))
				t.LossMask = append(t.LossMask, 0)
				t.Logprobs = append(t.Logprobs, 0)
			}
			pos += m
		}
	}
	if withRef {
		t.RefLogprobs = make([]float32, len(t.Logprobs))
		for i, m := range t.LossMask {
			if m == 1 {
				t.RefLogprobs[i] = t.Logprobs[i] - float32(rng.Float64()*0.1)
			}
		}
	}
	parts := map[string]float64{}
	for _, name := range []string{"outcome", "format", "tool_success", "call_cost"} {
		if rng.IntN(3) > 0 {
			parts[name] = math.Round(rng.NormFloat64()*100) / 100
		}
	}
	for _, v := range parts {
		t.Reward.Total += v
	}
	if len(parts) > 0 {
		t.Reward.Parts = parts
	}
	if rng.IntN(3) > 0 {
		for range t.ModelSegments() {
			t.StepRewards = append(t.StepRewards, rng.NormFloat64())
		}
	}
	if rng.IntN(2) == 0 {
		t.Answer = fmt.Sprint(rng.IntN(1000))
		t.Meta = json.RawMessage(`{"source": "calcdata", "level": 2}`)
	}
	return t
}

// genAdvantage derives a valid advantage record from a trajectory.
func genAdvantage(rng *rand.Rand, t traj.Trajectory) traj.AdvantageRecord {
	a := traj.AdvantageRecord{
		Schema: traj.AdvantageSchema, TrajectoryID: t.ID, GroupID: t.GroupID, Iteration: t.Iteration, SampleIndex: t.SampleIndex,
		PolicyVersion: t.PolicyVersion, Temperature: t.Temperature, InputIDs: t.Tokens, PromptLen: t.PromptLen, LossMask: t.LossMask,
		OldLogprobs: t.Logprobs, RefLogprobs: t.RefLogprobs, Reward: t.Reward, StepRewards: t.StepRewards,
		Segments: t.Segments, Mode: "hybrid", Estimator: "grpo", ZeroVariance: rng.IntN(10) == 0, Stale: rng.IntN(10) == 0,
	}
	a.Advantages = make([]float32, len(t.LossMask))
	adv := float32(rng.NormFloat64())
	for i, m := range t.LossMask {
		if m == 1 {
			a.Advantages[i] = adv
		}
	}
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

// genRecords returns n trajectories in groups of 4 and their advantage records.
func genRecords(seed uint64, n int) ([]traj.Trajectory, []traj.AdvantageRecord) {
	rng := rand.New(rand.NewPCG(seed, 7))
	const g = 4
	ts := make([]traj.Trajectory, 0, n)
	as := make([]traj.AdvantageRecord, 0, n)
	for i := range n {
		t := genTrajectory(rng, "job-1", i/g, i%g, g)
		ts = append(ts, t)
		as = append(as, genAdvantage(rng, t))
	}
	return ts, as
}
