package trainer

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// commitOnCheck commits a group (its records and its done mark, one
// transaction, as the advantage service does) just before the driver's
// first SISMEMBER reaches Redis.
type commitOnCheck struct {
	commit func(ctx context.Context) error
	fired  bool
}

func (h *commitOnCheck) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (h *commitOnCheck) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}
func (h *commitOnCheck) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if cmd.Name() == "sismember" && !h.fired {
			h.fired = true
			if err := h.commit(ctx); err != nil {
				return err
			}
		}
		return next(ctx, cmd)
	}
}

func TestDriverWaitsForRecordsOfAGroupSeenDone(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	writer := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	defer writer.Close()
	driver := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	defer driver.Close()
	ctx := context.Background()
	const job, G = "race", 4
	keys := stream.JobKeys(job)
	gid := traj.GroupID(job, "p0", 1)
	h := &commitOnCheck{commit: func(ctx context.Context) error {
		_, err := writer.TxPipelined(ctx, func(pipe goredis.Pipeliner) error {
			for i := range G {
				temp := 1.0
				rec := traj.AdvantageRecord{Schema: traj.AdvantageSchema, TrajectoryID: fmt.Sprintf("%s/%d", gid, i), GroupID: gid, Iteration: 1,
					SampleIndex: i, InputIDs: []int32{1, 2, 3, 4, 5}, PromptLen: 3, LossMask: traj.Mask{1, 1}, OldLogprobs: []float32{-1, -1},
					Advantages: []float32{1, 1}, Mode: "outcome", Estimator: "grpo", Temperature: &temp}
				data, err := wire.EncodeRecord(&rec)
				if err != nil {
					return err
				}
				var values []any
				for _, f := range stream.RecordFields(&rec, data) {
					values = append(values, f.Name, f.Value)
				}
				pipe.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Advantages, Values: values})
			}
			pipe.SAdd(ctx, keys.GroupsDone, gid)
			return nil
		})
		return err
	}}
	driver.AddHook(h)
	src, err := learner.NewStreamSource(ctx, driver, learner.StreamOptions{Job: job, Consumer: DriverConsumer, Size: 1 << 20, MaxWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	it := &iterationSource{src: src, client: driver, keys: keys, groupSize: G, timeout: 30 * time.Second}
	it.expect(gid)
	b, err := it.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !h.fired || len(b.Records) != G || it.droppedGroups != 0 {
		t.Fatalf("commit fired %v; batch %d records, want %d; %d groups counted dropped, want 0", h.fired, len(b.Records), G, it.droppedGroups)
	}
}
