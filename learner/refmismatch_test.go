package learner

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

// RefMismatch measures the behaviour vs ref_log_prob mismatch over policy
// tokens, as the learner's rollout_mismatch defines it (Schulman's k3 with
// the reference in the learner's place); injected tokens, and trajectories
// without ref_log_prob, add nothing.
func TestRefMismatch(t *testing.T) {
	g := trajtest.Group(trajtest.Options{Size: 2})
	var deltas []float64
	for i := range g.Trajectories {
		tr := &g.Trajectories[i]
		tr.RefLogprobs = make([]float32, len(tr.Logprobs))
		for j := range tr.Logprobs {
			if tr.LossMask[j] == 0 {
				tr.RefLogprobs[j] = 5 // injected: not counted
				continue
			}
			d := 0.25 * float32(i+1)
			deltas = append(deltas, float64(d))
			tr.RefLogprobs[j] = tr.Logprobs[j] - d
		}
	}
	var m RefMismatch
	if m.Report() != nil {
		t.Fatal("an empty RefMismatch reports statistics")
	}
	for i := range g.Trajectories {
		m.Add(&g.Trajectories[i])
	}
	plain := trajtest.Group(trajtest.Options{Size: 1})
	m.Add(&plain.Trajectories[0]) // no ref_log_prob
	var mean, k3 float64
	for _, d := range deltas {
		mean += d / float64(len(deltas))
		k3 += (math.Exp(-d) + d - 1) / float64(len(deltas)) // Schulman's k3, d = behaviour - ref
	}
	r := m.Report()
	if r == nil || r.MaxAbs != 0.5 || math.Abs(r.MeanAbs-mean) > 1e-6 || math.Abs(r.K3-k3) > 1e-6 {
		t.Fatalf("report %+v, want max 0.5, mean %.6g, k3 %.6g", r, mean, k3)
	}
	var b bytes.Buffer
	if err := m.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if line := b.String(); !strings.HasPrefix(line, "ref mismatch ") || !strings.Contains(line, "over 6 policy tokens") || !strings.Contains(line, "max |Δ| 0.5,") {
		t.Errorf("text %q", line)
	}

	var none RefMismatch
	none.Add(&traj.Trajectory{LossMask: traj.Mask{1}, Logprobs: []float32{-1}})
	b.Reset()
	if err := none.WriteText(&b); err != nil || b.Len() != 0 || none.Report() != nil {
		t.Errorf("without ref_log_prob: text %q (%v), report %v", b.String(), err, none.Report())
	}
}
