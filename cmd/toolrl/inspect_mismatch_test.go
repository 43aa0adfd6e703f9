package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/traj"
)

// inspect prints the behaviour vs ref_logprobs mismatch over policy tokens
// (learner.RefMismatch, whose figures learner's tests check) in text and
// JSON; a file without ref_logprobs has no such line.
func TestInspectRefMismatch(t *testing.T) {
	dir := t.TempDir()
	with, without := filepath.Join(dir, "ref.jsonl"), filepath.Join(dir, "plain.jsonl")
	g := exportGroup("job", 0, 2)
	plain := exportGroup("job", 0, 2)
	for i := range g.Trajectories {
		tr := &g.Trajectories[i]
		tr.RefLogprobs = make([]float32, len(tr.Logprobs))
		for j := range tr.Logprobs {
			if tr.LossMask[j] == 0 {
				continue // injected tokens carry 0 in both
			}
			tr.RefLogprobs[j] = tr.Logprobs[j] - 0.25*float32(i+1)
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
			MaxAbs float64 `json:"max_abs"`
		} `json:"ref_mismatch"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.RefMismatch == nil {
		t.Fatalf("inspect --json: %v, ref_mismatch %v", err, doc.RefMismatch)
	}
	if m := doc.RefMismatch; m.MaxAbs != 0.5 {
		t.Fatalf("ref_mismatch %+v, want max 0.5", *m)
	}
	stdout, _, err = runToolrl(t, "inspect", without)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stdout, "ref mismatch") {
		t.Fatalf("ref mismatch line without ref_logprobs:\n%s", stdout)
	}
}
