package orchestrator

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/stream"
)

// TestDistributedWorkersWriteEachGroupOnce enqueues prompts (twice: the
// second enqueue adds nothing), plants a corrupt entry, lets a worker die
// holding a prompt, and runs two workers at once on a real redis-server:
// every group must land in the groups stream exactly once, the corrupt entry
// in the dead letters.
func TestDistributedWorkersWriteEachGroupOnce(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	model := tinyPolicy(t)
	ctx := context.Background()
	client := srv.Client(t)
	const job = "dist"
	keys := stream.JobKeys(job)

	set, err := prompt.ReadFile(writePrompts(t, 8), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := prompt.Enqueue(ctx, client, job, set.Prompts); err != nil || n != 8 {
		t.Fatalf("enqueue: %d, %v", n, err)
	}
	if n, err := prompt.Enqueue(ctx, client, job, set.Prompts); err != nil || n != 0 {
		t.Fatalf("second enqueue added %d (%v), want 0", n, err)
	}
	client.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Prompts, Values: []any{stream.FieldPrompt, "{not json"}})

	// A worker that takes one prompt and dies without writing or acking.
	dead, err := prompt.NewRedisFeed(ctx, client, prompt.RedisFeedOptions{Job: job, Consumer: "dead", ClaimIdle: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := dead.Next(ctx, true); !ok || err != nil {
		t.Fatalf("dead worker got nothing: %v", err)
	}

	var g errgroup.Group
	sums := make([]*Summary, 2)
	feeds := make([]*prompt.RedisFeed, 2)
	for i := range 2 {
		feed, err := prompt.NewRedisFeed(ctx, client, prompt.RedisFeedOptions{Job: job, Consumer: fmt.Sprintf("w%d", i), ClaimIdle: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		feeds[i] = feed
		jobSpec := tinyJob(model, "redis", srv.URL())
		jobSpec.ID = setting.Of(job)
		g.Go(func() error {
			s, err := quietRun(t, ctx, jobSpec, RunOptions{Feed: feed})
			sums[i] = s
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	entries, err := client.XRange(ctx, keys.Groups, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range entries {
		seen[fmt.Sprint(e.Values["group_id"])]++
	}
	if len(entries) != 8 || len(seen) != 8 {
		t.Fatalf("groups stream holds %d entries for %d groups, want 8 and 8: %v", len(entries), len(seen), seen)
	}
	// A prompt may be reclaimed while its first worker still rolls it out
	// (the claim timeout here is short); the second write is then refused.
	if sums[0].GroupsWritten+sums[1].GroupsWritten != 8 {
		t.Errorf("workers wrote %d + %d groups (%d + %d duplicates refused), want 8 in all",
			sums[0].GroupsWritten, sums[1].GroupsWritten, sums[0].GroupsDuplicate, sums[1].GroupsDuplicate)
	}
	if feeds[0].Stats().Corrupt+feeds[1].Stats().Corrupt != 1 {
		t.Errorf("dead letters %d + %d, want 1", feeds[0].Stats().Corrupt, feeds[1].Stats().Corrupt)
	}
	if n, _ := client.XLen(ctx, keys.Dead).Result(); n != 1 {
		t.Errorf("dead-letter stream holds %d entries, want 1", n)
	}
	if p, _ := client.XPending(ctx, keys.Prompts, stream.ActorsGroup).Result(); p.Count != 0 {
		t.Errorf("%d prompts still pending", p.Count)
	}
}
