package trainer

import (
	"testing"

	"github.com/toolrl/toolrl/traj"
)

// TestAdvantageStatsCountsRightAnswersPushedDown checks the inversion
// counts issue #26's target reads: a right answer's advantage at its first
// trained token below zero, or at or below a wrong one's, in a group that
// holds both.
func TestAdvantageStatsCountsRightAnswersPushedDown(t *testing.T) {
	rec := func(group string, i int, first float32) traj.AdvantageRecord {
		// The first response token is injected (mask 0, advantage 0): the
		// count must read the first trained one.
		return traj.AdvantageRecord{GroupID: group, SampleIndex: i,
			LossMask: traj.Mask{0, 1, 1}, Advantages: []float32{0, first, 0.7}}
	}
	groups := []traj.Group{
		{GroupID: "mixed", Trajectories: samples(4)},
		{GroupID: "allright", Trajectories: samples(2)},
		{GroupID: "dropped", Trajectories: samples(2)},
	}
	correct := [][]bool{{true, true, true, false}, {true, true}, {true, false}}
	records := []traj.AdvantageRecord{
		rec("mixed", 0, 0.5),   // right, above the wrong one
		rec("mixed", 1, -0.1),  // right, negative, still above the wrong one
		rec("mixed", 2, -0.45), // right, negative and below the wrong one
		rec("mixed", 3, -0.4),  // wrong
		rec("allright", 0, -0.2), rec("allright", 1, 0.2),
	}
	st := advantageStats(records, groups, correct)
	if st.MixedGroups != 1 || st.RightNegative != 2 || st.RightNotAboveWrong != 1 {
		t.Fatalf("mixed %d, right negative %d, right not above wrong %d; want 1, 2, 1",
			st.MixedGroups, st.RightNegative, st.RightNotAboveWrong)
	}
	if st.Groups != 3 || st.Records != 6 {
		t.Fatalf("groups %d records %d, want 3 and 6", st.Groups, st.Records)
	}
	// Trajectories stored out of sample order (as a group assembled in
	// completion order is): the counts follow the sample index, not the
	// position.
	shuffled := []traj.Group{{GroupID: "mixed", Trajectories: make([]traj.Trajectory, 4)}}
	for pos, idx := range []int{3, 0, 2, 1} {
		shuffled[0].Trajectories[pos].SampleIndex = idx
	}
	// By position: sample 3 (wrong), 0, 2, 1 (right).
	if st := advantageStats(records[:4], shuffled, [][]bool{{false, true, true, true}}); st.MixedGroups != 1 || st.RightNegative != 2 || st.RightNotAboveWrong != 1 {
		t.Fatalf("out of order: mixed %d, right negative %d, right not above wrong %d; want 1, 2, 1",
			st.MixedGroups, st.RightNegative, st.RightNotAboveWrong)
	}
	// A tie counts as not above.
	records[2].Advantages[1] = -0.4
	if st := advantageStats(records, groups, correct); st.RightNotAboveWrong != 1 {
		t.Fatalf("a tie: right not above wrong %d, want 1", st.RightNotAboveWrong)
	}
}

// samples are n trajectories with sample indexes 0..n-1 in order.
func samples(n int) []traj.Trajectory {
	ts := make([]traj.Trajectory, n)
	for i := range ts {
		ts[i].SampleIndex = i
	}
	return ts
}
