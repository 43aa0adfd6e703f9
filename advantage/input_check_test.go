package advantage

import (
	"context"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// badRewards are rewards the advantage stage must refuse, each with the words
// its reason names.
var badRewards = []struct {
	name   string
	reward traj.Reward
	reason string
}{
	{"parts disagree", traj.Reward{Total: 1, Parts: map[string]float64{"outcome": 1, "call_cost": -0.1}}, "reward.parts sum to 0.9"},
	{"absurd total", traj.Reward{Total: 1e300}, "magnitude"},
	{"infinite total", traj.Reward{Total: math.Inf(1)}, "want a finite value"},
}

// TestServiceDeadLettersInconsistentReward: a group whose reward total is
// not the sum of its parts, absurd or not finite goes to the dead letters
// with the reason, instead of giving advantages computed from it.
func TestServiceDeadLettersInconsistentReward(t *testing.T) {
	svc := &Service{opts: ServiceOptions{Job: "job"}}
	for _, tc := range badRewards {
		g := streamGroup("job", 3)
		g.Trajectories[1].Reward = tc.reward
		payload, err := wire.EncodeGroup(g)
		if err != nil && !math.IsInf(tc.reward.Total, 0) {
			t.Fatal(err)
		}
		if err != nil { // the encoder refuses +Inf: write the JSON by hand
			good, _ := wire.EncodeGroup(streamGroup("job", 3))
			payload = []byte(strings.Replace(string(good), `"reward":{"total":`, `"reward":{"total":1e999,"x":`, 1))
		}
		wg := svc.decode(stream.Message{ID: "1-0", Values: map[string]any{stream.FieldGroup: string(payload), stream.FieldGroupID: g.GroupID}})
		if wg.err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !strings.Contains(wg.err.Error(), tc.reason) && !strings.Contains(wg.err.Error(), "total") {
			t.Errorf("%s: reason %q does not say what is wrong", tc.name, wg.err)
		}
	}
	// Rounding noise is not an error: parts that sum to the total only in exact arithmetic.
	g := streamGroup("job", 3)
	g.Trajectories[0].Reward = traj.Reward{Total: 0.3, Parts: map[string]float64{"outcome": 0.1, "format": 0.2}}
	payload, _ := wire.EncodeGroup(g)
	if wg := svc.decode(stream.Message{ID: "1-0", Values: map[string]any{stream.FieldGroup: string(payload), stream.FieldGroupID: g.GroupID}}); wg.err != nil {
		t.Errorf("0.1 + 0.2 = 0.3 refused: %v", wg.err)
	}
}

// writeTrajectories writes ts to a JSONL file and returns its path.
func writeTrajectories(t *testing.T, ts []traj.Trajectory) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.jsonl")
	w, err := export.CreateTrajectories(path, export.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ts...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func offlineFile(t *testing.T, path string) ([]traj.AdvantageRecord, OfflineStats, error) {
	t.Helper()
	src, err := export.OpenTrajectories(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	sink := &sliceSink{}
	st, err := Offline(context.Background(), src, sink, OfflineOptions{Config: DefaultConfig()})
	return sink.recs, st, err
}

// TestOfflineRejectsInconsistentReward: offline stops with an error naming
// the group and the file line.
func TestOfflineRejectsInconsistentReward(t *testing.T) {
	for _, tc := range badRewards[:2] { // the JSON writer refuses +Inf itself
		g0, g1 := streamGroup("job", 1), streamGroup("job", 2)
		g1.Trajectories[2].Reward = tc.reward
		path := writeTrajectories(t, append(g0.Trajectories, g1.Trajectories...))
		_, _, err := offlineFile(t, path)
		line := len(g0.Trajectories) + 3
		if err == nil || !strings.Contains(err.Error(), path+" line "+itoa(line)) ||
			!strings.Contains(err.Error(), "group "+g1.GroupID) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: err %v, want one naming %s line %d, group %s and %q", tc.name, err, path, line, g1.GroupID, tc.reason)
		}
	}
}

// TestOfflineSkipsRepeatedGroup: a group written twice gives its records
// once and is counted; a repeated id with other content is an error.
func TestOfflineSkipsRepeatedGroup(t *testing.T) {
	g0, g1 := streamGroup("job", 1), streamGroup("job", 2)
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

	changed := streamGroup("job", 1)
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
