package export

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

// partsGroups returns n groups of two trajectories with reward part
// "outcome"; only the last group's also have "late_part".
func partsGroups(n int) []traj.Trajectory {
	var ts []traj.Trajectory
	for p := range n {
		g := trajtest.Group(trajtest.Options{Prompt: fmt.Sprintf("p%d", p), Size: 2, Sample: func(i int, t *traj.Trajectory) {
			t.Reward = traj.Reward{Total: float64(i), Parts: map[string]float64{"outcome": float64(i)}}
			if p == n-1 {
				t.Reward.Parts["late_part"] = -1
				t.Reward.Total--
			}
		}})
		ts = append(ts, g.Trajectories...)
	}
	return ts
}

// ForEachRecord calls its function with every record, and stops with the
// context's error once the context is done.
func TestForEachRecord(t *testing.T) {
	src := filepath.Join(t.TempDir(), "in.jsonl")
	w, err := CreateTrajectories(src, WriterOptions{})
	trajtest.WriteAll(t, w, err, partsGroups(2)...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	count := func(*traj.Trajectory) { n++ }
	if err := ForEachRecord(ctx, src, OpenTrajectories, count); !errors.Is(err, context.Canceled) || n != 0 {
		t.Errorf("ForEachRecord after cancel: %v after %d records", err, n)
	}
	if err := ForEachRecord(context.Background(), src, OpenTrajectories, count); err != nil || n != 4 {
		t.Errorf("ForEachRecord: %v after %d records, want 4", err, n)
	}
}
