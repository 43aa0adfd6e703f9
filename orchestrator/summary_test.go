package orchestrator

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/traj"
)

// TestSummaryPairsParallelCalls: the rollout summary classifies each call
// of a turn by the tool segment of the same rank (not the one that starts
// where its model segment ends), counts calling turns and the most calls in
// one, and says so in its text only when a turn made several.
func TestSummaryPairsParallelCalls(t *testing.T) {
	g := testsupport.ReadGroup(t, "../traj/testdata/parallel-calls-group.json")
	// Call 1 of turn 0 failed, call 2 succeeded: the old pairing (the tool
	// segment starting where the model segment ends) gave call 2 call 1's
	// result and call 1 none.
	g.Trajectories[0].Segments[2].Result = &traj.ToolResult{ErrorClass: "timeout", Content: "error: timeout"}
	s := &Summary{Calls: map[string]int{}, ToolCalls: map[string]map[string]int{}, Finish: map[traj.FinishReason]int{}}
	s.addGroup(&g, []bool{true, false})
	want := map[string]int{"ok": 2, "timeout": 1, "not_executed": 2}
	if fmt.Sprint(s.Calls) != fmt.Sprint(want) || s.TurnsWithCall != 3 || s.MaxCallsPerTurn != 2 || s.TrajectoriesWithCall != 2 {
		t.Errorf("calls %v turns with call %d max per turn %d trajectories with call %d; want %v 3 2 2", s.Calls, s.TurnsWithCall, s.MaxCallsPerTurn, s.TrajectoriesWithCall, want)
	}
	var b bytes.Buffer
	s.Write(&b)
	if !strings.Contains(b.String(), "; 3 calling turns, up to 2 calls per turn\n") {
		t.Errorf("summary text lacks the per-turn line:\n%s", b.String())
	}
}
