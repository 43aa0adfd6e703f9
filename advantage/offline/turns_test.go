package offline

import (
	"reflect"
	"testing"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/internal/testsupport"
)

// TestOfflineParallelCalls: the offline pass reads trajectories whose turns
// hold several calls (traj's parallel-calls fixture) and writes, in process
// mode, the records advantage.Compute gives their group: one step per turn.
func TestOfflineParallelCalls(t *testing.T) {
	g := testsupport.ReadGroup(t, "../../traj/testdata/parallel-calls-group.json")
	cfg := advantage.DefaultConfig()
	cfg.Mode, cfg.MaxStaleness = advantage.ModeProcess, -1
	want, _, err := advantage.Compute(&g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := offlineRun(t, g.Trajectories, Options{Config: cfg})
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for _, w := range want {
		r := got[w.TrajectoryID]
		if !reflect.DeepEqual(r.Advantages, w.Advantages) {
			t.Errorf("%s: advantages %v, Compute's %v", w.TrajectoryID, r.Advantages, w.Advantages)
		}
		// The two model segments of turn 0 share its advantage.
		if s := g.Trajectories[0].Segments; w.TrajectoryID == g.Trajectories[0].ID && r.Advantages[s[0].Start] != r.Advantages[s[1].Start] {
			t.Errorf("%s: turn 0's segments differ: %v", w.TrajectoryID, r.Advantages)
		}
	}
}
