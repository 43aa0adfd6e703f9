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
	type credit struct {
		mode advantage.Mode
		keep bool // KeepOutcomeSign, on groups with outcome parts
	}
	for _, c := range []credit{{advantage.ModeOutcome, false}, {advantage.ModeProcess, false}, {advantage.ModeHybrid, false},
		{advantage.ModeStepGroup, false}, {advantage.ModeTurns, false}, {advantage.ModeStepGroup, true}} {
		mode := c.mode
		job := "modes-" + string(mode)
		if c.keep {
			job += "-keep-sign"
		}
		groups := make([]*traj.Group, n)
		var all []traj.Trajectory
		for i := range groups {
			groups[i] = streamGroup(job, i)
			if c.keep {
				withOutcomeParts(groups[i])
			}
			// The members reversed in the file: the offline pass regroups them.
			for k := len(groups[i].Trajectories) - 1; k >= 0; k-- {
				all = append(all, groups[i].Trajectories[k])
			}
		}
		opts := testServiceOptions(job)
		opts.Config.Mode, opts.Config.Estimator, opts.Config.KL = mode, advantage.EstimatorDrGRPO, advantage.KLNone
		opts.Config.KeepOutcomeSign = c.keep
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
		if c.keep {
			// The option must have had something to do in these groups.
			plainCfg := offCfg
			plainCfg.KeepOutcomeSign = false
			clipped := 0
			for _, g := range groups {
				plain, _, err := advantage.Compute(g, plainCfg)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range plain {
					w := sink.recs[p.TrajectoryID]
					if d := maxDiff(p.Advantages, w.Advantages); d != 0 {
						clipped++
					}
				}
			}
			if clipped == 0 {
				t.Fatalf("%s with keep_outcome_sign: no record differs from the plain credit's", mode)
			}
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

// withOutcomeParts gives g's trajectories the staged reward's outcome part,
// right (1) for even samples and wrong (0) for odd ones, the rest of each
// total in a second part, so that KeepOutcomeSign has verdicts to keep.
func withOutcomeParts(g *traj.Group) {
	for k := range g.Trajectories {
		t := &g.Trajectories[k]
		o := float64(1 - k%2)
		t.Reward.Parts = map[string]float64{"outcome": o, "others": t.Reward.Total - o}
	}
}
