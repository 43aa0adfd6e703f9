package serve

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// TestServiceOutputsEachIterationOfAPromptOnce: one prompt's groups of
// iterations 0, 1 and 2 go through the service on a real redis-server, every
// entry delivered twice (first to a consumer that dies without acking, then
// claimed by the service) and iteration 1's entry added twice to the stream.
// The done set is keyed by group id, so each iteration's records come out
// exactly once, carrying their iteration; with one id for all iterations
// (job/prompt), iterations 1 and 2 were dropped as already done.
func TestServiceOutputsEachIterationOfAPromptOnce(t *testing.T) {
	const job, prompt = "iterjob", "p"
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connectTest(t, r.URL())
	ctx := context.Background()
	keys := stream.JobKeys(job)

	groups := []*traj.Group{iterationGroup(job, prompt, 0), iterationGroup(job, prompt, 1), iterationGroup(job, prompt, 2)}
	written, err := stream.NewProducer(client, stream.ProducerOptions{}).AddGroups(ctx, job, groups)
	if err != nil || !slices.Equal(written, []bool{true, true, true}) {
		t.Fatalf("producer wrote %v (%v), want all three iterations", written, err)
	}
	// The same group again, around the producer's written set: a second
	// entry of iteration 1.
	data, err := wire.EncodeGroup(groups[1])
	if err != nil {
		t.Fatal(err)
	}
	fields := stream.GroupFields(stream.GroupPayload{GroupID: groups[1].GroupID, PolicyVersion: groups[1].PolicyVersion, JSON: data})
	values := make([]any, 0, 2*len(fields))
	for _, f := range fields {
		values = append(values, f.Name, f.Value)
	}
	if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Groups, Values: values}).Err(); err != nil {
		t.Fatal(err)
	}

	// A consumer takes all four entries and dies: each is delivered again,
	// to the service, once the claim timeout passes.
	dead, err := stream.NewConsumer(client, stream.ConsumerOptions{Stream: keys.Groups, Group: stream.AdvantageGroup,
		Consumer: "dead", DeadLetter: keys.Dead, Count: 16, Block: 10 * time.Millisecond, ClaimIdle: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := dead.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	if msgs, err := dead.Read(ctx); err != nil || len(msgs) != 4 {
		t.Fatalf("the dying consumer read %d entries (%v), want 4", len(msgs), err)
	}

	svc, err := New(client, testServiceOptions(job))
	if err != nil {
		t.Fatal(err)
	}
	_, cancel, runDone := startRun(t, svc)
	waitFor(t, "every entry acknowledged", 30*time.Second, func() bool {
		p, err := client.XPending(ctx, keys.Groups, stream.AdvantageGroup).Result()
		return err == nil && p.Count == 0 && doneCount(client, job) == 3
	})
	cancel()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}

	done, err := client.SMembers(ctx, keys.GroupsDone).Result()
	slices.Sort(done)
	if want := []string{"iterjob/p", "iterjob/p@1", "iterjob/p@2"}; err != nil || !slices.Equal(done, want) {
		t.Fatalf("done set %v (%v), want %v", done, err, want)
	}
	recs, _ := advantageRecords(t, client, job) // fails on a record written twice
	if len(recs) != 3*testG {
		t.Fatalf("%d records, want %d (3 iterations x %d)", len(recs), 3*testG, testG)
	}
	for k, g := range groups {
		for i, tr := range g.Trajectories {
			rec, ok := recs[tr.ID]
			if !ok {
				t.Fatalf("no record of %s", tr.ID)
			}
			if rec.Iteration != k || rec.GroupID != g.GroupID || rec.SampleIndex != i {
				t.Errorf("record %s: iteration %d group %s sample %d, want %d %s %d", tr.ID, rec.Iteration, rec.GroupID, rec.SampleIndex, k, g.GroupID, i)
			}
			if rec.Reward.Total != tr.Reward.Total {
				t.Errorf("record %s: reward %g, its trajectory's %g", tr.ID, rec.Reward.Total, tr.Reward.Total)
			}
		}
	}
	entries, _ := client.XRange(ctx, keys.Advantages, "-", "+").Result()
	for _, e := range entries {
		id := fmt.Sprint(e.Values[stream.FieldGroupID])
		if !slices.Contains(done, id) {
			t.Errorf("advantages entry %s names group %q", e.ID, id)
		}
	}
}
