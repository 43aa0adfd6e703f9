package reward

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// rewardGolden is the scoring of the reward space (default weights, and
// tool_success/tool_use visible) and of the committed trajectory fixtures,
// written by Score before rewards were per turn (TOOLRL_UPDATE_GOLDEN=1
// rewrites it).
const rewardGolden = "testdata/reward-golden.jsonl"

// TestRewardOneCallPerTurnUnchanged: with one call per turn, scoring per
// turn gives every total, part and step reward byte for byte as the
// per-model-segment scoring did (the golden file was written by it).
func TestRewardOneCallPerTurnUnchanged(t *testing.T) {
	var out bytes.Buffer
	line := func(id string, tr *traj.Trajectory) {
		// The golden file keeps the reward object of schema v2 (total,
		// parts): the rewards, not their spelling, are under test.
		type reward struct {
			Total float64            `json:"total"`
			Parts map[string]float64 `json:"parts,omitempty"`
		}
		rec := struct {
			ID          string    `json:"id"`
			Reward      reward    `json:"reward"`
			StepRewards []float64 `json:"step_rewards"`
		}{id, reward{tr.Reward.Total, tr.Reward.Parts}, tr.StepRewards}
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(b, '\n'))
	}
	def := defaultRewards(t)
	visible := defaultRewards(t)
	visible.ToolSuccess, visible.ToolUse = setting.Of[float64](0.05), setting.Of[float64](0.07)
	for _, cfg := range []struct {
		name string
		c    Config
	}{{"default", defaultRewards(t)}, {"visible", visible}} {
		for _, s := range rewardSpace(t, cfg.c) {
			line(cfg.name+" "+s.String(), &s.t)
		}
	}
	for _, path := range []string{"../export/testdata/v1-trajectories.jsonl", "../export/testdata/v2-pre-iteration-trajectories.jsonl"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			tr, err := wire.DecodeTrajectory(l)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			def.Score(&tr, tr.Answer)
			line(path+" "+tr.ID, &tr)
		}
	}
	g := testsupport.ReadGroup(t, "../advantage/testdata/calc-demo-group.json")
	for i := range g.Trajectories {
		tr := &g.Trajectories[i]
		def.Score(tr, tr.Answer)
		line("calc-demo "+tr.ID, tr)
	}
	if os.Getenv("TOOLRL_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(rewardGolden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(rewardGolden)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Bytes(); !bytes.Equal(got, want) {
		gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := range min(len(gl), len(wl)) {
			if !bytes.Equal(gl[i], wl[i]) {
				t.Fatalf("%s line %d differs:\n got %s\nwant %s", rewardGolden, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s: %d lines, want %d", rewardGolden, len(gl), len(wl))
	}
}

// parallel lays the case's calls out as one assistant turn (one model
// segment per call, then one tool segment per call, answering them in
// order), then the answer turn, which quotes every used result: the layout
// of parallel calls that traj.Segment describes.
func (c rewardCase) parallel() traj.Trajectory {
	seq := c.trajectory()
	var models, toolsegs []traj.Segment
	quote := ""
	for i := range c.calls {
		m, tool := seq.Segments[2*i], seq.Segments[2*i+1]
		m.Turn, tool.Turn = 0, 0
		m.Text = "then " + m.Call.Raw
		models, toolsegs = append(models, m), append(toolsegs, tool)
		if c.calls[i] == callOKUsed {
			quote += fmt.Sprintf(" with %s,", tool.Result.Content)
		}
	}
	answer := "41"
	if c.right {
		answer = rewardSpaceAnswer
	}
	text := quote + " so " + answer
	if c.marked {
		text = quote + " The answer is " + answer + "."
	}
	turn := 0
	if len(c.calls) > 0 {
		turn = 1
	}
	segs := append(append(models, toolsegs...), traj.Segment{Kind: traj.SegmentModel, Turn: turn, Text: text})
	return traj.Trajectory{Segments: segs, FinishReason: traj.FinishStop}
}

// TestRewardParallelCallsKeepTheirParts: the same calls made in one turn
// score every call on its own, as made one per turn: the same parts (a
// malformed or failed call among valid ones is penalised alone) and total;
// the turn's step reward is the sum of its calls' parts, and outcome,
// format and penalty_clip go to the last step. One step per turn: 2 with
// calls, 1 without.
func TestRewardParallelCallsKeepTheirParts(t *testing.T) {
	c := defaultRewards(t)
	c.ToolSuccess, c.ToolUse = setting.Of[float64](0.05), setting.Of[float64](0.07)
	for _, s := range rewardSpace(t, c) {
		par := s.parallel()
		if got := c.Score(&par, rewardSpaceAnswer); got != s.right {
			t.Fatalf("%v: parallel scored correct=%v", s, got)
		}
		for k, v := range s.t.Reward.Parts {
			if par.Reward.Parts[k] != v {
				t.Errorf("%v: part %s = %v in one turn, %v one per turn", s, k, par.Reward.Parts[k], v)
			}
		}
		if math.Abs(par.Reward.Total-s.t.Reward.Total) > 1e-9 {
			t.Errorf("%v: total %v in one turn, %v one per turn", s, par.Reward.Total, s.t.Reward.Total)
		}
		want := 1
		if len(s.calls) > 0 {
			want = 2
		}
		if len(par.StepRewards) != want || par.Steps() != want {
			t.Fatalf("%v: %d step rewards, %d steps, want %d", s, len(par.StepRewards), par.Steps(), want)
		}
		last := par.Reward.Parts[PartOutcome] + par.Reward.Parts[PartFormat] + par.Reward.Parts[PartPenaltyClip]
		if want == 2 {
			calls := 0.0
			for _, v := range s.t.StepRewards[:len(s.calls)] {
				calls += v
			}
			if math.Abs(par.StepRewards[0]-calls) > 1e-9 {
				t.Errorf("%v: turn 0's step %v, want its calls' parts %v", s, par.StepRewards[0], calls)
			}
		}
		if got := par.StepRewards[want-1]; math.Abs(got-last) > 1e-9 {
			t.Errorf("%v: last step %v, want outcome + format + penalty_clip = %v", s, got, last)
		}
	}
}
