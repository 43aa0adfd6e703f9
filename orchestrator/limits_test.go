package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/traj"
)

// TestLoadJobMaxToolCalls: limits.max_tool_calls left out is the default 3,
// an explicit 0 means no tool calls (it was refused as "0 is not a valid
// value"), and a negative value is refused naming the key.
func TestLoadJobMaxToolCalls(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]int{
		"":                                  3,
		"limits:\n  max_turns: 2\n":         3,
		"limits:\n  max_tool_calls: 0\n":    0,
		"limits:\n  max_tool_calls: 5\n":    5,
		"limits:\n  max_tool_calls: -1\n":   -1,
		"limits:\n  max_tool_calls: null\n": 3,
	} {
		path := filepath.Join(dir, "job.yaml")
		if err := os.WriteFile(path, []byte("model: m\nprompts: p.jsonl\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		job, err := LoadJob(path)
		if err == nil {
			err = job.Normalize()
		}
		if want < 0 {
			if err == nil || !strings.Contains(err.Error(), "limits.max_tool_calls: -1") {
				t.Errorf("%q: err = %v, want a refusal naming limits.max_tool_calls", body, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", body, err)
			continue
		}
		if got := job.Limits.MaxToolCalls.Get(); got != want {
			t.Errorf("%q: max_tool_calls %d, want %d", body, got, want)
		}
	}
}

// TestRolloutMaxToolCallsZeroExecutesNoCall runs the default policy (which
// calls the calculator) with max_tool_calls 0: no call is executed, no
// result is injected, and a trajectory whose model calls ends with finish
// reason max_tool_calls.
func TestRolloutMaxToolCallsZeroExecutesNoCall(t *testing.T) {
	out := filepath.Join(t.TempDir(), "nocalls.jsonl")
	job := calcJob(t, out)
	job.Limits.MaxToolCalls = setting.Of(0)
	sum, err := quietRun(t, context.Background(), job, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ts := readTrajectories(t, out)
	if len(ts) != 48 {
		t.Fatalf("%d trajectories, want 48", len(ts))
	}
	capped := 0
	for _, tr := range ts {
		for i, s := range tr.Segments {
			if s.Kind == traj.SegmentTool || s.Result != nil {
				t.Errorf("%s: segment %d holds an executed tool result: %+v", tr.ID, i, s)
			}
		}
		if tr.FinishReason == traj.FinishMaxToolCalls {
			capped++
		}
	}
	if capped == 0 {
		t.Error("no trajectory ended with max_tool_calls; the default policy should have tried a call")
	}
	if sum.Calls["ok"] != 0 {
		t.Errorf("summary counts %d ok calls, want 0", sum.Calls["ok"])
	}
	t.Logf("%d of %d trajectories ended at the cap of 0; calls by outcome %v", capped, len(ts), sum.Calls)
}
