package serve

import (
	"context"
	"testing"
	"time"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/advantage/offline"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
)

// TestServiceMatchesOfflineInEveryMode: the Redis service and the offline
// pass compute the same records for every credit, the step-group credit
// included (its step groups are found from the tokens, so the order members
// arrive in must not matter: the service sees a group as one entry, the
// offline pass from a file of trajectories).
func TestServiceMatchesOfflineInEveryMode(t *testing.T) {
	const n = 10
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connectTest(t, r.URL())
	for _, mode := range []advantage.Mode{advantage.ModeOutcome, advantage.ModeProcess, advantage.ModeHybrid, advantage.ModeStepGroup, advantage.ModeTurns} {
		job := "modes-" + string(mode)
		groups := make([]*traj.Group, n)
		var all []traj.Trajectory
		for i := range groups {
			groups[i] = streamGroup(job, i)
			// The members reversed in the file: the offline pass regroups them.
			for k := len(groups[i].Trajectories) - 1; k >= 0; k-- {
				all = append(all, groups[i].Trajectories[k])
			}
		}
		opts := testServiceOptions(job)
		opts.Config.Mode, opts.Config.Estimator, opts.Config.KL = mode, advantage.EstimatorDrGRPO, advantage.KLNone
		svc, err := New(client, opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel, runDone := startRun(t, svc)
		if _, err := stream.NewProducer(client, stream.ProducerOptions{}).AddGroups(ctx, job, groups); err != nil {
			t.Fatal(err)
		}
		waitFor(t, string(mode)+": all groups done", 60*time.Second, func() bool { return doneCount(client, job) == n })
		cancel()
		if err := <-runDone; err != nil {
			t.Fatal(err)
		}
		got, _ := advantageRecords(t, client, job)
		offCfg := opts.Config
		offCfg.MaxStaleness = -1
		sink := &recordsByID{}
		if _, err := offline.Run(context.Background(), &trajectoryList{ts: all}, sink, offline.Options{Config: offCfg}); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(sink.recs) || len(got) != n*testG {
			t.Fatalf("%s: service wrote %d records, offline %d", mode, len(got), len(sink.recs))
		}
		for id, w := range sink.recs {
			g, ok := got[id]
			if !ok {
				t.Fatalf("%s: no service record for %s", mode, id)
			}
			if d := maxDiff(g.Advantages, w.Advantages); d != 0 || g.Mode != string(mode) {
				t.Errorf("%s: record %s: advantages differ from offline's by %g (mode %s)", mode, id, d, g.Mode)
			}
		}
	}
}
