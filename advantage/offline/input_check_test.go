package offline

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

// writeTrajectories writes ts to a JSONL file and returns its path.
func writeTrajectories(t *testing.T, ts []traj.Trajectory) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.jsonl")
	w, err := export.CreateTrajectories(path, export.WriterOptions{})
	trajtest.WriteAll(t, w, err, ts...)
	return path
}

func offlineFile(t *testing.T, path string) ([]traj.AdvantageRecord, Stats, error) {
	t.Helper()
	src, err := export.OpenTrajectories(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	sink := &sliceSink{}
	st, err := Run(context.Background(), src, sink, Options{Config: advantage.DefaultConfig()})
	return sink.recs, st, err
}

// TestOfflineRejectsInconsistentReward: offline stops with an error naming
// the group and the file line.
func TestOfflineRejectsInconsistentReward(t *testing.T) {
	for _, tc := range trajtest.BadRewards[:3] { // JSON cannot carry the last, an infinite total
		g0, g1 := testGroup(1), testGroup(2)
		g1.Trajectories[2].Reward = tc.Reward
		path := writeTrajectories(t, append(g0.Trajectories, g1.Trajectories...))
		_, _, err := offlineFile(t, path)
		line := len(g0.Trajectories) + 3
		if err == nil || !strings.Contains(err.Error(), path+" line "+itoa(line)) ||
			!strings.Contains(err.Error(), "group "+g1.GroupID) || !strings.Contains(err.Error(), tc.Reason) {
			t.Errorf("%s: err %v, want one naming %s line %d, group %s and %q", tc.Name, err, path, line, g1.GroupID, tc.Reason)
		}
	}
}

// TestOfflineSkipsRepeatedGroup: a group written twice gives its records
// once and is counted; a repeated id with other content is an error.
func TestOfflineSkipsRepeatedGroup(t *testing.T) {
	g0, g1 := testGroup(1), testGroup(2)
	var ts []traj.Trajectory
	ts = append(ts, g0.Trajectories...)
	ts = append(ts, g1.Trajectories...)
	ts = append(ts, g0.Trajectories...)
	recs, st, err := offlineFile(t, writeTrajectories(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	if want := len(g0.Trajectories) + len(g1.Trajectories); len(recs) != want || st.Duplicates != int64(len(g0.Trajectories)) {
		t.Errorf("%d records, %d duplicates; want %d records, %d duplicates", len(recs), st.Duplicates, want, len(g0.Trajectories))
	}

	changed := testGroup(1)
	changed.Trajectories[1].Logprobs[0] /= 2
	ts = append(append(append([]traj.Trajectory(nil), g0.Trajectories...), g1.Trajectories...), changed.Trajectories...)
	path := writeTrajectories(t, ts)
	_, _, err = offlineFile(t, path)
	line := len(g0.Trajectories) + len(g1.Trajectories) + 2
	if err == nil || !strings.Contains(err.Error(), "different content") || !strings.Contains(err.Error(), path+" line "+itoa(line)) {
		t.Errorf("err %v, want a repeated id with different content at line %d", err, line)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
