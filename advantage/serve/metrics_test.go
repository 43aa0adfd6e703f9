package serve

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/stream"
)

// The stream gauges report each stream's XLEN and, per consumer group,
// XINFO GROUPS pending and lag: 5 groups produced, 2 read unacknowledged,
// a trainer group on the advantages stream that has read nothing, 3 prompts
// queued for the actors, 1 claimed.
func TestServiceStreamDepthGauges(t *testing.T) {
	const job = "depthjob"
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connectTest(t, r.URL())
	ctx := context.Background()
	svc, err := New(client, testServiceOptions(job))
	if err != nil {
		t.Fatal(err)
	}
	c, err := stream.NewConsumer(client, stream.ConsumerOptions{Stream: svc.keys.Groups, Group: stream.AdvantageGroup, Consumer: "depth", Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := produce(ctx, client, job, 5, 100); err != nil {
		t.Fatal(err)
	}
	if msgs, err := c.Read(ctx); err != nil || len(msgs) != 2 {
		t.Fatalf("read %d entries (%v), want 2", len(msgs), err)
	}
	if err := client.XGroupCreateMkStream(ctx, svc.keys.Advantages, "trainer", "0").Err(); err != nil {
		t.Fatal(err)
	}
	// Three prompts queued for distributed actors, one claimed by a worker.
	for range 3 {
		if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: svc.keys.Prompts, Values: []string{"prompt", "{}"}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.XGroupCreate(ctx, svc.keys.Prompts, stream.ActorsGroup, "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: stream.ActorsGroup, Consumer: "w", Streams: []string{svc.keys.Prompts, ">"}, Count: 1}).Err(); err != nil {
		t.Fatal(err)
	}
	svc.refresh(ctx)
	want := `
# HELP toolrl_advantage_stream_lag_entries Entries of the stream not yet delivered to the consumer group (XINFO GROUPS lag), by stream and group; absent while Redis cannot tell.
# TYPE toolrl_advantage_stream_lag_entries gauge
toolrl_advantage_stream_lag_entries{group="advantage",stream="groups"} 3
toolrl_advantage_stream_lag_entries{group="trainer",stream="advantages"} 0
toolrl_advantage_stream_lag_entries{group="actors",stream="prompts"} 2
# HELP toolrl_advantage_stream_length_entries Entries in the job's stream (XLEN), by stream: prompts (the distributed actors' work queue), groups (the service's input), advantages (its output), dead (dead letters).
# TYPE toolrl_advantage_stream_length_entries gauge
toolrl_advantage_stream_length_entries{stream="advantages"} 0
toolrl_advantage_stream_length_entries{stream="dead"} 0
toolrl_advantage_stream_length_entries{stream="groups"} 5
toolrl_advantage_stream_length_entries{stream="prompts"} 3
# HELP toolrl_advantage_stream_pending_entries Entries of the stream delivered to the consumer group and not yet acknowledged (XINFO GROUPS pending), by stream and group.
# TYPE toolrl_advantage_stream_pending_entries gauge
toolrl_advantage_stream_pending_entries{group="advantage",stream="groups"} 2
toolrl_advantage_stream_pending_entries{group="trainer",stream="advantages"} 0
toolrl_advantage_stream_pending_entries{group="actors",stream="prompts"} 1
`
	if err := testutil.GatherAndCompare(svc.reg, strings.NewReader(want),
		"toolrl_advantage_stream_length_entries", "toolrl_advantage_stream_pending_entries", "toolrl_advantage_stream_lag_entries"); err != nil {
		t.Error(err)
	}
	if err := svc.Healthy(); err != nil {
		t.Errorf("healthy after a refresh: %v", err)
	}
}

// The service's registry has the Go and process collectors and build info
// beside its own series, and none of the names this version retired.
func TestServiceMetricNames(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	svc, err := New(connectTest(t, r.URL()), testServiceOptions("namesjob"))
	if err != nil {
		t.Fatal(err)
	}
	svc.refresh(context.Background())
	families, err := svc.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "toolrl_build_info",
		"toolrl_advantage_groups_total", "toolrl_advantage_output_backlog_entries", "toolrl_advantage_stream_length_entries"} {
		if !got[name] {
			t.Errorf("no %s", name)
		}
	}
	for _, name := range []string{"toolrl_advantage_groups_per_second", "toolrl_advantage_lag", "toolrl_advantage_pending", "toolrl_advantage_output_backlog"} {
		if got[name] {
			t.Errorf("%s is still exposed", name)
		}
	}
}
