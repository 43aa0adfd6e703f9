package serve

import (
	encjson "encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/stream"
)

// The service's path (wire.DecodeGroupArrays, advantage.Compute,
// wire.AppendRecord with the raw arrays spliced in) writes every mode's
// records byte for byte as encoding/json does, from groups with every codec
// corner trajtest draws.
func TestServiceRecordsMatchEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	svc := &Service{opts: Options{Job: "job"}}
	modes := []advantage.Mode{advantage.ModeOutcome, advantage.ModeProcess, advantage.ModeHybrid}
	kls := []advantage.KLEstimator{advantage.KLNone, advantage.KLK1, advantage.KLK2, advantage.KLK3}
	for iter := 0; iter < 120; iter++ {
		o := trajtest.Options{Size: 1 + rng.IntN(6), Iteration: iter % 3, Temperature: trajtest.Temperature(0.7), Sample: trajtest.RolloutRewards}
		g := trajtest.Random(rng, o, trajtest.Shape{Corners: true, Steps: [2]int{1, 4}})
		for i := range g.Trajectories {
			tr := &g.Trajectories[i]
			if len(tr.StepRewards) == 0 && tr.ModelSegments() > 0 { // Corners leaves a third without: process mode needs them
				tr.StepRewards = make([]float64, tr.ModelSegments())
				for k := range tr.StepRewards {
					tr.StepRewards[k] = rng.NormFloat64()
				}
			}
			trajtest.RolloutRewards(i, tr) // Corners draws parts that sum to its own total
			tr.Reward.Parts = nil
		}
		if iter%5 == 4 && o.Iteration == 0 {
			trajtest.AsV1(g)
		}
		payload, err := encjson.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		cfg := advantage.DefaultConfig()
		cfg.Mode, cfg.KL, cfg.ProcessWeight = modes[iter%3], kls[iter%4], 0.7
		m := stream.Message{ID: "1-0", Values: map[string]any{stream.FieldGroup: string(payload), stream.FieldGroupID: g.GroupID}}
		out, _, err := svc.compute(m, cfg)
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		recs, _, err := advantage.Compute(g, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			want, err := encjson.Marshal(&recs[i])
			if err != nil {
				t.Fatal(err)
			}
			entry := out.Entries[i]
			if got := entry[len(entry)-1].Value; string(got) != string(want) {
				t.Fatalf("iter %d record %d:\n got %s\nwant %s", iter, i, got, want)
			}
		}
	}
}
