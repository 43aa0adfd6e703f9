package serve

import (
	"context"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/stream"
)

// trainer reads and acknowledges every record of the job's advantages
// stream with its own consumer group until ctx ends, and reports how many
// it acknowledged.
func trainer(ctx context.Context, client goredis.UniversalClient, job string, acked chan<- int) {
	stream := stream.JobKeys(job).Advantages
	n := 0
	defer func() { acked <- n }()
	if err := client.XGroupCreateMkStream(ctx, stream, "trainer", "0").Err(); err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		return
	}
	for ctx.Err() == nil {
		res, err := client.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: "trainer", Consumer: "t", Streams: []string{stream, ">"},
			Count: 16, Block: 20 * time.Millisecond}).Result()
		if err != nil {
			continue
		}
		var ids []string
		for _, m := range res[0].Messages {
			ids = append(ids, m.ID)
		}
		if err := client.XAck(ctx, stream, "trainer", ids...).Err(); err == nil {
			n += len(ids)
		}
	}
}

func counterValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// TestServiceWaitsForTrainers: once a trainer has a consumer group that
// stops reading, the service stops taking groups when the advantages stream
// holds MaxOutputBacklog records the trainer has not acknowledged, holds
// nothing while it waits, and resumes when the trainer catches up; every
// group still comes out exactly once. Before any trainer group exists,
// nothing is counted and nothing waits.
func TestServiceWaitsForTrainers(t *testing.T) {
	const n = 6
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connectTest(t, r.URL())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := func(job string) (*Service, context.CancelFunc, <-chan error) {
		if err := produce(ctx, client, job, n, -1); err != nil {
			t.Fatal(err)
		}
		addCorrupt(t, client, job)
		opts := testServiceOptions(job)
		opts.Workers, opts.Batch, opts.MaxOutputBacklog = 1, 2, 2*testG // two groups' records
		svc, err := New(client, opts)
		if err != nil {
			t.Fatal(err)
		}
		_, stop, done := startRun(t, svc)
		return svc, stop, done
	}

	// No trainer group: three times the limit goes through.
	svc, stop, done := run("untracked")
	waitFor(t, "every group without a trainer group", 10*time.Second, func() bool { return doneCount(client, "untracked") == n })

	// A trainer group that does not read: the service waits at the limit.
	const job = "bpjob"
	keys := stream.JobKeys(job)
	if err := client.XGroupCreateMkStream(ctx, keys.Advantages, "trainer", "0").Err(); err != nil {
		t.Fatal(err)
	}
	svc2, stop2, done2 := run(job)
	limit := float64(svc2.opts.MaxOutputBacklog)
	waitFor(t, "the service to reach the output backlog limit", 10*time.Second, func() bool {
		return counterValue(t, svc2.m.outputBacklog) >= limit
	})
	// It waits with the rest of the groups still in their stream: nothing
	// pending, and no more records than one batch past the limit.
	pending, err := client.XPending(ctx, keys.Groups, stream.AdvantageGroup).Result()
	if err != nil {
		t.Fatal(err)
	}
	written, _ := client.XLen(ctx, keys.Advantages).Result()
	if pending.Count != 0 || doneCount(client, job) >= n || written > svc2.opts.MaxOutputBacklog+svc2.opts.Batch*testG {
		t.Fatalf("while waiting: %d pending, %d of %d groups done, %d records", pending.Count, doneCount(client, job), n, written)
	}
	acked := make(chan int, 1)
	tctx, stopTrainer := context.WithCancel(ctx)
	go trainer(tctx, client, job, acked)
	waitFor(t, "every group", 10*time.Second, func() bool { return doneCount(client, job) == n })
	waitFor(t, "the trainer to acknowledge every record", 10*time.Second, func() bool {
		p, err := client.XPending(ctx, keys.Advantages, "trainer").Result()
		lag := int64(1)
		if infos, err2 := client.XInfoGroups(ctx, keys.Advantages).Result(); err2 == nil && len(infos) == 1 {
			lag = infos[0].Lag
		}
		return err == nil && p.Count == 0 && lag == 0
	})
	stopTrainer()
	if got := <-acked; got != n*testG {
		t.Errorf("trainer acknowledged %d records, want %d", got, n*testG)
	}
	stop()
	stop2()
	for _, d := range []<-chan error{done, done2} {
		if err := <-d; err != nil {
			t.Fatal(err)
		}
	}
	verifyExactlyOnce(t, client, "untracked", n)
	verifyExactlyOnce(t, client, job, n)
	if s := counterValue(t, svc2.m.backpressureSeconds); s <= 0 {
		t.Errorf("backpressure_seconds_total %g after a wait", s)
	}
	if s := counterValue(t, svc.m.backpressureSeconds); s != 0 {
		t.Errorf("backpressure_seconds_total %g without a trainer group, want 0", s)
	}
}

// TestServiceTrimsConsumedEntries: with TrimConsumed, what the service and a
// trainer have acknowledged leaves both streams; nothing unacknowledged does.
func TestServiceTrimsConsumedEntries(t *testing.T) {
	const job, n = "trimjob", 12
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connectTest(t, r.URL())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keys := stream.JobKeys(job)
	opts := testServiceOptions(job)
	opts.TrimConsumed = true
	svc, err := New(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, stop, done := startRun(t, svc)
	acked := make(chan int, 1)
	tctx, stopTrainer := context.WithCancel(ctx)
	go trainer(tctx, client, job, acked)
	if err := produce(ctx, client, job, n, -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every group", 10*time.Second, func() bool { return doneCount(client, job) == n })
	waitFor(t, "both streams trimmed to their last delivered entry", 10*time.Second, func() bool {
		g, _ := client.XLen(ctx, keys.Groups).Result()
		a, _ := client.XLen(ctx, keys.Advantages).Result()
		return g <= 1 && a <= 1
	})
	stopTrainer()
	if got := <-acked; got != n*testG {
		t.Errorf("trainer acknowledged %d records, want %d (a trim removed unread records)", got, n*testG)
	}
	if trimmed := counterValue(t, svc.m.trimmed); trimmed < float64(n-1+n*testG-1) {
		t.Errorf("trimmed_entries_total %g, want at least %d", trimmed, n-1+n*testG-1)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
