package advantage

import (
	"slices"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/traj"
)

// parallelGroup is traj's parallel-calls fixture (a turn of two calls
// answered by two tool segments; a last turn of two unanswered calls), with
// reference logprobs so that KL can be folded in.
func parallelGroup(t *testing.T) traj.Group {
	t.Helper()
	g := testsupport.ReadGroup(t, "../traj/testdata/parallel-calls-group.json")
	for i := range g.Trajectories {
		tr := &g.Trajectories[i]
		tr.RefLogprobs = make([]float32, len(tr.LossMask))
		for j, m := range tr.LossMask {
			if m == 1 {
				tr.RefLogprobs[j] = -0.25 - 0.125*float32(j%3)
			}
		}
	}
	return g
}

// oneSegmentPerTurn merges each turn's model segments into one and its tool
// segments into one: the same tokens, masks and step rewards laid out as a
// one-call-per-turn trajectory.
func oneSegmentPerTurn(g traj.Group) traj.Group {
	out := g
	out.Trajectories = slices.Clone(g.Trajectories)
	for i := range out.Trajectories {
		tr := &out.Trajectories[i]
		var segs []traj.Segment
		for _, s := range tr.Segments {
			if n := len(segs); n > 0 && segs[n-1].Kind == s.Kind && segs[n-1].Turn == s.Turn {
				segs[n-1].End = s.End
				continue
			}
			segs = append(segs, s)
		}
		tr.Segments = segs
	}
	return out
}

// TestStepIsATurn: every model segment of a turn of several calls gets the
// turn's advantage in every mode, estimator and KL fold, and the advantages
// equal those of the same tokens laid out one segment per turn (the
// per-step credit of one call per turn, unchanged).
func TestStepIsATurn(t *testing.T) {
	par := parallelGroup(t)
	one := oneSegmentPerTurn(par)
	if err := one.Validate(); err != nil {
		t.Fatalf("merged layout: %v", err)
	}
	for _, cfg := range allConfigs() {
		cfg.KLCoef = 0.05
		if cfg.KL == KLNone {
			cfg.KLCoef = 0
		}
		got, _ := mustCompute(t, par, cfg)
		want, _ := mustCompute(t, one, cfg)
		for i := range got {
			if !slices.Equal(got[i].Advantages, want[i].Advantages) {
				t.Errorf("%s/%s/%s sample %d: advantages %v, one segment per turn %v", cfg.Mode, cfg.Estimator, cfg.KL, i, got[i].Advantages, want[i].Advantages)
			}
			segs := par.Trajectories[i].Segments
			for j := 1; j < len(segs); j++ {
				a, b := segs[j-1], segs[j]
				if a.Kind == traj.SegmentModel && b.Kind == traj.SegmentModel && a.Turn == b.Turn &&
					got[i].Advantages[a.Start] != got[i].Advantages[b.Start] {
					t.Errorf("%s sample %d: segments %d and %d of turn %d have advantages %v and %v", cfg.Mode, i, j-1, j, a.Turn,
						got[i].Advantages[a.Start], got[i].Advantages[b.Start])
				}
			}
		}
		if cfg.Mode != ModeOutcome && got[0].Advantages[par.Trajectories[0].Segments[0].Start] == got[0].Advantages[par.Trajectories[0].Segments[4].Start] {
			t.Errorf("%s: turns 0 and 1 of sample 0 share an advantage: steps are not told apart", cfg.Mode)
		}
	}
	// One step reward per model segment is refused in process mode.
	bad := parallelGroup(t)
	bad.Trajectories[0].StepRewards = []float64{-0.1, -0.1, 1.4}
	cfg := plainGRPO()
	cfg.Mode = ModeProcess
	if _, _, err := Compute(&bad, cfg); err == nil {
		t.Error("process mode accepted one step reward per model segment")
	}
}
