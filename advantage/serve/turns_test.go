package serve

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/advantage/offline"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
)

// TestServiceParallelCalls: a group whose turns hold several calls (traj's
// parallel-calls fixture) goes through a real Redis and the service, and its
// process-mode records equal the offline pass's on the same trajectories:
// the two agree on a step being a turn.
func TestServiceParallelCalls(t *testing.T) {
	g := testsupport.ReadGroup(t, "../../traj/testdata/parallel-calls-group.json")
	job := g.JobID
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connectTest(t, r.URL())
	opts := testServiceOptions(job)
	opts.Config.Mode, opts.Config.KL = advantage.ModeProcess, advantage.KLNone
	svc, err := New(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel, runDone := startRun(t, svc)
	if _, err := stream.NewProducer(client, stream.ProducerOptions{}).AddGroups(ctx, job, []*traj.Group{&g}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the group done", 30*time.Second, func() bool { return doneCount(client, job) == 1 })
	cancel()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	got, _ := advantageRecords(t, client, job)

	offCfg := opts.Config
	offCfg.MaxStaleness = -1 // the service had no policy version
	sink := &recordsByID{}
	if _, err := offline.Run(context.Background(), &trajectoryList{ts: g.Trajectories}, sink, offline.Options{Config: offCfg}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(g.Trajectories) || len(sink.recs) != len(got) {
		t.Fatalf("service wrote %d records, offline %d, want %d", len(got), len(sink.recs), len(g.Trajectories))
	}
	for id, w := range sink.recs {
		if s := got[id]; !reflect.DeepEqual(s.Advantages, w.Advantages) || !reflect.DeepEqual(s.StepRewards, w.StepRewards) {
			t.Errorf("record %s: service advantages %v, offline %v", id, s.Advantages, w.Advantages)
		}
	}
	first := got[g.Trajectories[0].ID]
	if segs := g.Trajectories[0].Segments; first.Advantages[segs[0].Start] != first.Advantages[segs[1].Start] || first.Advantages[segs[0].Start] == 0 {
		t.Errorf("turn 0's two model segments: advantages %v", first.Advantages)
	}
}
