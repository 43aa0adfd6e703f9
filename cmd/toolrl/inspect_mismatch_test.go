package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/traj"
)

// inspect reports the behaviour vs ref_logprobs mismatch over policy tokens,
// as the learner's rollout_mismatch defines it, in text and JSON; a
// file without ref_logprobs has no such line.
func TestInspectRefMismatch(t *testing.T) {
	dir := t.TempDir()
	with, without := filepath.Join(dir, "ref.jsonl"), filepath.Join(dir, "plain.jsonl")
	g := exportGroup("job", 0, 2)
	plain := exportGroup("job", 0, 2)
	var deltas []float64
	for i := range g.Trajectories {
		tr := &g.Trajectories[i]
		tr.RefLogprobs = make([]float32, len(tr.Logprobs))
		for j := range tr.Logprobs {
			if tr.LossMask[j] == 0 {
				continue // injected tokens carry 0 in both
			}
			d := 0.25 * float32(i+1)
			deltas = append(deltas, float64(d))
			tr.RefLogprobs[j] = tr.Logprobs[j] - d
		}
	}
	for path, group := range map[string]*traj.Group{with: g, without: plain} {
		w, err := export.CreateTrajectories(path, export.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(group.Trajectories...); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var mean, k3 float64
	for _, d := range deltas {
		mean += d / float64(len(deltas))
		k3 += (math.Exp(-d) + d - 1) / float64(len(deltas)) // Schulman's k3, d = behaviour - ref
	}
	stdout, _, err := runToolrl(t, "inspect", with)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "ref mismatch") || !strings.Contains(stdout, "max |Δ| 0.5,") {
		t.Fatalf("no ref mismatch line with max 0.5:\n%s", stdout)
	}
	stdout, _, err = runToolrl(t, "inspect", "--json", with)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		RefMismatch *struct {
			MaxAbs  float64 `json:"max_abs"`
			MeanAbs float64 `json:"mean_abs"`
			K3      float64 `json:"k3"`
		} `json:"ref_mismatch"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.RefMismatch == nil {
		t.Fatalf("inspect --json: %v, ref_mismatch %v", err, doc.RefMismatch)
	}
	if m := doc.RefMismatch; m.MaxAbs != 0.5 || math.Abs(m.MeanAbs-mean) > 1e-6 || math.Abs(m.K3-k3) > 1e-6 {
		t.Fatalf("ref_mismatch %+v, want max 0.5, mean %.6g, k3 %.6g", *m, mean, k3)
	}
	stdout, _, err = runToolrl(t, "inspect", without)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stdout, "ref mismatch") {
		t.Fatalf("ref mismatch line without ref_logprobs:\n%s", stdout)
	}
}
