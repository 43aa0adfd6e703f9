package orchestrator

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/sink"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// TestPauseScheduleHook runs a job whose samples pause on a PauseSchedule
// (sample i after every 4 + i%2 sampled tokens) instead of at parsed calls:
// every model turn but the last is exactly the sample's interval long, and
// each pause is the schedule's call, executed by the job's calculator and
// injected as a parsed call's result would be.
func TestPauseScheduleHook(t *testing.T) {
	model := tinyPolicy(t)
	job := tinyJob(model, writePrompts(t, 2), filepath.Join(t.TempDir(), "unused.jsonl"))
	interval := func(i int) int { return 4 + i%2 }
	mem := &sink.MemorySink{}
	sum, err := quietRun(t, context.Background(), job, RunOptions{Sink: mem, Hooks: Hooks{
		Pauses: &PauseSchedule{Interval: interval,
			Call: tools.Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"1+1"}`), Raw: "[CALC: 1+1]", Form: tools.FormBracket}},
		// EOS ignored: every turn runs to its pause (or the turn cap).
		Sampling: func(s *actor.Sampling) { s.EOS = []int32{} },
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(mem.Groups) != 2 || sum.GroupsWritten != 2 {
		t.Fatalf("%d groups in the sink, %d written; want 2", len(mem.Groups), sum.GroupsWritten)
	}
	maxCalls := 3 // the job's default limits: 3 calls, 4 turns
	for _, g := range mem.Groups {
		for _, tr := range g.Trajectories {
			var calls int
			for _, s := range tr.Segments {
				switch s.Kind {
				case traj.SegmentModel:
					if s.Turn < maxCalls && s.End-s.Start != interval(tr.SampleIndex) {
						t.Errorf("%s turn %d: %d sampled tokens, want the interval %d", tr.ID, s.Turn, s.End-s.Start, interval(tr.SampleIndex))
					}
				case traj.SegmentTool:
					calls++
					if s.Call == nil || s.Call.Name != "calculator" || s.Result == nil || s.Result.Content != "2" {
						t.Errorf("%s turn %d: call %+v, result %+v; want the schedule's call answered 2", tr.ID, s.Turn, s.Call, s.Result)
					}
				}
			}
			if calls != maxCalls {
				t.Errorf("%s: %d calls, want %d", tr.ID, calls, maxCalls)
			}
		}
	}
}

// TestPauseScheduleRefusesBadInterval: an interval that is not positive is an
// error naming the sample, not a sequence that never pauses.
func TestPauseScheduleRefusesBadInterval(t *testing.T) {
	model := tinyPolicy(t)
	job := tinyJob(model, writePrompts(t, 1), filepath.Join(t.TempDir(), "unused.jsonl"))
	_, err := quietRun(t, context.Background(), job, RunOptions{Sink: &sink.MemorySink{}, Hooks: Hooks{
		Pauses: &PauseSchedule{Interval: func(i int) int { return 1 - i }, Call: tools.Call{Name: "calculator"}},
	}})
	if err == nil || !strings.Contains(err.Error(), "pause schedule: sample 1: interval 0") {
		t.Fatalf("err = %v, want the pause schedule's sample 1 named", err)
	}
}
