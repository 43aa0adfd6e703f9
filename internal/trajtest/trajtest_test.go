package trajtest_test

import (
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

// TestGroupLayout: the zero Options give the documented group, and Steps
// lay out segments, masks, logprobs and step rewards.
func TestGroupLayout(t *testing.T) {
	g := trajtest.Group(trajtest.Options{})
	if g.GroupID != "job/p" || len(g.Trajectories) != 1 || g.Trajectories[0].ID != "job/p/0" {
		t.Fatalf("zero options: group %s of %d", g.GroupID, len(g.Trajectories))
	}
	g = trajtest.Group(trajtest.Options{Job: "j", Prompt: "q", Iteration: 2, Rewards: []float64{0, 1, 2},
		Steps: []trajtest.Step{{Model: 2, Tool: 1, Reward: 0.5}, {Model: 1, Reward: 1}}})
	tr := g.Trajectories[2]
	want := traj.Mask{1, 1, 0, 1}
	if g.GroupID != "j/q@2" || tr.ID != "j/q@2/2" || tr.GroupSize != 3 || tr.Reward.Total != 2 ||
		!reflect.DeepEqual(tr.LossMask, want) || !reflect.DeepEqual(tr.Logprobs, []float32{-1, -1, 0, -1}) ||
		!reflect.DeepEqual(tr.StepRewards, []float64{0.5, 1}) || len(tr.Segments) != 3 || tr.Segments[1].Result == nil {
		t.Fatalf("group %s: %+v", g.GroupID, tr)
	}
	// Without Rewards, the total is what the rollout writes: the steps' sum.
	tr = trajtest.Trajectory(trajtest.Options{Steps: []trajtest.Step{{Model: 1, Tool: 1, Reward: 0.25}, {Model: 1, Reward: 0.5}}}, 0)
	if tr.Reward.Total != 0.75 || tr.ValidateRewardSums() != nil {
		t.Errorf("reward %+v, step rewards %v", tr.Reward, tr.StepRewards)
	}
}

// TestRandomIsValidAndSeeded: Random gives valid groups, the same ones for
// the same seed, with Corners and without.
func TestRandomIsValidAndSeeded(t *testing.T) {
	for _, s := range []trajtest.Shape{{}, {Prompt: [2]int{1, 40}, Model: [2]int{1, 60}, Tool: [2]int{1, 12}, Vocab: 32000, Corners: true}} {
		for seed := range uint64(50) {
			a := trajtest.Random(rand.New(rand.NewPCG(seed, 1)), trajtest.Options{Size: 4}, s)
			b := trajtest.Random(rand.New(rand.NewPCG(seed, 1)), trajtest.Options{Size: 4}, s)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("seed %d: two groups", seed)
			}
		}
	}
}

// TestRecordAndFiles: Record gives valid records that WriteAll writes with
// export's writer and ReadAll reads back.
func TestRecordAndFiles(t *testing.T) {
	g := trajtest.Group(trajtest.Options{Size: 2, Temperature: trajtest.Temperature(0.7)})
	path := filepath.Join(t.TempDir(), "a.jsonl")
	recs := []traj.AdvantageRecord{trajtest.Record(g.Trajectories[0], 1), trajtest.Record(g.Trajectories[1], -1)}
	w, err := export.CreateAdvantages(path, export.WriterOptions{})
	trajtest.WriteAll(t, w, err, recs...)
	r, err := export.OpenAdvantages(path)
	got := trajtest.ReadAll(t, r, err)
	if !reflect.DeepEqual(got, recs) || got[1].Advantages[2] != 0 || got[1].Advantages[0] != -1 {
		t.Fatalf("read back %+v", got)
	}
}

// TestSyntheticIsTheRolloutsShape: Synthetic's sizes, and rewards that pass
// the reward-sum check the advantage stage applies.
func TestSyntheticIsTheRolloutsShape(t *testing.T) {
	g := trajtest.Synthetic("bench", 3, 8, 16)
	for _, tr := range g.Trajectories {
		if tr.PromptLen != 16 || tr.ResponseLen() != 3*16+2*8 || len(tr.RefLogprobs) != tr.ResponseLen() || tr.ModelSegments() != 3 {
			t.Fatalf("%s: prompt %d response %d segments %d", tr.ID, tr.PromptLen, tr.ResponseLen(), len(tr.Segments))
		}
		if err := tr.ValidateRewardSums(); err != nil {
			t.Error(err)
		}
	}
	if !reflect.DeepEqual(g, trajtest.Synthetic("bench", 3, 8, 16)) {
		t.Error("two groups for one seed")
	}
}
