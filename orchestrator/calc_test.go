package orchestrator

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/traj"
)

// calcJob is a small rollout of the shipped default policy on the shipped prompts.
func calcJob(t *testing.T, out string) Job {
	t.Helper()
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	model := filepath.Join(root, "models", "calc")
	if _, err := os.Stat(filepath.Join(model, "onnx", "model.onnx")); err != nil {
		t.Fatalf("the default policy is missing: %v", err)
	}
	return Job{ID: setting.Of("calc-test"), Model: setting.Of(model), Prompts: setting.Of(filepath.Join(root, "data", "calc", "prompts.jsonl")),
		Limit: setting.Of(12), GroupSize: setting.Of(4), Seed: setting.Of[uint64](3), Batch: setting.Of(16), Threads: setting.Of(1), Out: setting.Of(out)}
}

// TestRolloutOnTheDefaultPolicyExecutesCalls runs the real default policy:
// it must call the calculator, the calls must run, their results must be
// injected as mask-0 tokens whose text is the bracket injection, and the
// rewards must pay for them.
func TestRolloutOnTheDefaultPolicyExecutesCalls(t *testing.T) {
	out := filepath.Join(t.TempDir(), "calc.jsonl")
	sum, err := quietRun(t, context.Background(), calcJob(t, out), RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ts := readTrajectories(t, out)
	if len(ts) != 48 {
		t.Fatalf("%d trajectories, want 48", len(ts))
	}
	calls, ok := 0, 0
	for _, tr := range ts {
		for i, s := range tr.Segments {
			if s.Kind != traj.SegmentTool {
				continue
			}
			calls++
			prev := tr.Segments[i-1]
			if prev.Kind != traj.SegmentModel || prev.Call == nil || !strings.HasSuffix(strings.TrimSpace(prev.Text), "]") {
				t.Errorf("%s: tool segment %d does not follow a model segment ending in a call: %+v", tr.ID, i, prev)
			}
			if s.Result == nil || s.Call == nil {
				t.Fatalf("%s: tool segment without call/result", tr.ID)
			}
			if s.Result.OK {
				ok++
				if s.Text != " = "+s.Result.Content {
					t.Errorf("%s: injected text %q, want %q", tr.ID, s.Text, " = "+s.Result.Content)
				}
			}
			for j := s.Start; j < s.End; j++ {
				if tr.LossMask[j] != 0 || tr.Logprobs[j] != 0 {
					t.Fatalf("%s: injected token %d has mask %d logprob %g", tr.ID, j, tr.LossMask[j], tr.Logprobs[j])
				}
			}
		}
		if tr.Reward.Parts["tool_success"] < 0 {
			t.Errorf("%s: negative tool_success", tr.ID)
		}
	}
	if calls == 0 || ok == 0 {
		t.Fatalf("the default policy made %d calls (%d ok) in 48 samples; it should call the calculator", calls, ok)
	}
	if sum.Calls["ok"] != ok {
		t.Errorf("summary counts %d ok calls, the file %d", sum.Calls["ok"], ok)
	}
	if sum.Correct == 0 {
		t.Error("no correct answer in 48 samples of the default policy")
	}
}

// TestRolloutAsyncToolsGivesValidGroups runs the same job with async tools:
// the output may differ in the last bits of logprobs (batches depend on tool
// timing) but must hold the same whole, valid groups.
func TestRolloutAsyncToolsGivesValidGroups(t *testing.T) {
	dir := t.TempDir()
	lock, async := filepath.Join(dir, "lock.jsonl"), filepath.Join(dir, "async.jsonl")
	if _, err := quietRun(t, context.Background(), calcJob(t, lock), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	job := calcJob(t, async)
	job.AsyncTools = setting.Of(true)
	sum, err := quietRun(t, context.Background(), job, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.GroupsWritten != 12 {
		t.Fatalf("async: %d groups, want 12", sum.GroupsWritten)
	}
	a, b := readTrajectories(t, lock), readTrajectories(t, async)
	if len(a) != len(b) {
		t.Fatalf("lockstep %d vs async %d trajectories", len(a), len(b))
	}
	// Rerunning lockstep is byte-identical.
	again := filepath.Join(dir, "again.jsonl")
	if _, err := quietRun(t, context.Background(), calcJob(t, again), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, lock), readAll(t, again)) {
		t.Fatal("two lockstep runs of the same job differ")
	}
}
