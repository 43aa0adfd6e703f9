package jobstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

func group(job string, prompt int) *traj.Group {
	return trajtest.Group(trajtest.Options{Job: job, Prompt: fmt.Sprintf("p%d", prompt), Size: 2, PolicyVersion: int64(prompt)})
}

// TestStreamConsumesNothing fills a job's groups stream through the real
// producer, lets the advantage consumer group hold one entry pending,
// reads the stream, and checks it yields every trajectory in stream order,
// none added after Open, while the consumer group's pending list and read
// position are unchanged; then the advantages stream.
func TestStreamConsumesNothing(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	ctx := context.Background()
	client := srv.Client(t)
	const job = "export-job"
	keys := stream.JobKeys(job)
	producer := stream.NewProducer(client, stream.ProducerOptions{MaxBacklog: -1})
	// Every other group in the binary group format (?group_format=binary).
	binProducer := stream.NewProducer(client, stream.ProducerOptions{MaxBacklog: -1, GroupFormat: stream.GroupFormatBinaryName})
	var want []traj.Trajectory
	// More groups than one XRANGE page, so paging is exercised.
	const groups = stream.RangePage + 44
	for p := range groups {
		g := group(job, p)
		want = append(want, g.Trajectories...)
		writer := producer
		if p%2 == 1 {
			writer = binProducer
		}
		if ok, err := writer.AddGroup(ctx, job, g); err != nil || !ok {
			t.Fatalf("AddGroup: %v %v", ok, err)
		}
	}
	if err := client.XGroupCreate(ctx, keys.Groups, stream.AdvantageGroup, "0").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := client.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: stream.AdvantageGroup, Consumer: "c1", Streams: []string{keys.Groups, ">"}, Count: 1}).Result(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, "redis://"+srv.Addr+"/0", job, export.Trajectories)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ok, err := producer.AddGroup(ctx, job, group(job, groups)); err != nil || !ok {
		t.Fatalf("AddGroup after Open: %v %v", ok, err)
	}
	before := groupState(t, client, keys.Groups)
	in := s.Input()
	if in.Name != keys.Groups || in.Kind != export.Trajectories || in.Path != "" {
		t.Errorf("Input: %+v", in)
	}
	r, err := in.Trajectories(ctx)
	got := trajtest.ReadAll(t, r, err)
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got)
	if !bytes.Equal(wantJSON, gotJSON) {
		t.Fatalf("read %d trajectories, want %d, or they differ", len(got), len(want))
	}
	if after := groupState(t, client, keys.Groups); after != before {
		t.Errorf("reading changed the consumer group: before %s, after %s", before, after)
	}

	// The advantages stream: one record per entry, as the service writes it,
	// in either record format (the second entry binary: --record-format
	// binary).
	var wantRecs []traj.AdvantageRecord
	for i := range 3 {
		rec := trajtest.Record(want[i], 1)
		wantRecs = append(wantRecs, rec)
		var fields []stream.Field
		if i == 1 {
			fields, err = stream.BinaryRecordFields(&rec)
		} else {
			var payload []byte
			payload, err = wire.EncodeRecord(&rec)
			fields = stream.RecordFields(&rec, payload)
		}
		if err != nil {
			t.Fatal(err)
		}
		var values []any
		for _, f := range fields {
			values = append(values, f.Name, f.Value)
		}
		if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Advantages, Values: values}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	adv, err := Open(ctx, "redis://"+srv.Addr, job, export.Advantages)
	if err != nil {
		t.Fatal(err)
	}
	defer adv.Close()
	if in := adv.Input(); in.Name != keys.Advantages || in.Kind != export.Advantages {
		t.Errorf("Input of the advantages: %+v", in)
	}
	ar, err := adv.Advantages(ctx)
	recs := trajtest.ReadAll(t, ar, err)
	wantJSON, _ = json.Marshal(wantRecs)
	gotJSON, _ = json.Marshal(recs)
	if !bytes.Equal(wantJSON, gotJSON) {
		t.Errorf("read %d advantage records, want %d, or they differ", len(recs), len(wantRecs))
	}
}

// Open refuses, with a *RequestError that lists the jobs found, a job that
// is not there, no job, a job written as the URL path (the path is the
// database, as in every toolrl Redis URL), an invalid job, and a job
// without the stream asked for.
func TestOpenRefusals(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	ctx := context.Background()
	client := srv.Client(t)
	const job = "export-job"
	if ok, err := stream.NewProducer(client, stream.ProducerOptions{MaxBacklog: -1}).AddGroup(ctx, job, group(job, 0)); err != nil || !ok {
		t.Fatalf("AddGroup: %v %v", ok, err)
	}
	for _, c := range []struct {
		path, job string
		kind      export.Kind
		want      string
	}{
		{"/0", "no-such-job", export.Trajectories, "jobs found: " + job},
		{"/0", "", export.Trajectories, "needs --job JOB; jobs found: " + job},
		{"", "", export.Trajectories, "needs --job JOB; jobs found: " + job},
		{"/1", job, export.Trajectories, "jobs found: none"}, // database 1 holds nothing
		{"/" + job, "", export.Trajectories, "the URL path is the database, as in every toolrl Redis URL; name the job with --job " + job},
		{"", "bad{job", export.Trajectories, "export: --job: "},
		{"", job, export.Advantages, "no stream toolrl:{" + job + "}:advantages (--stream advantages): nothing to export; jobs found: " + job},
	} {
		s, err := Open(ctx, "redis://"+srv.Addr+c.path, c.job, c.kind)
		var refused *RequestError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open %s job %q %v: %v, want a *RequestError saying %q", c.path, c.job, c.kind, err, c.want)
		}
		if s != nil {
			s.Close()
		}
	}
	if !IsURL("redis://h:1") || !IsURL("rediss://h:1") || IsURL("out/redis.jsonl") {
		t.Error("IsURL")
	}
}

// groupState is the advantage consumer group's pending count, last delivered
// id and entries read.
func groupState(t *testing.T, client *goredis.Client, stream string) string {
	t.Helper()
	infos, err := client.XInfoGroups(context.Background(), stream).Result()
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, g := range infos {
		states = append(states, fmt.Sprintf("%s pending=%d last=%s read=%d lag=%d", g.Name, g.Pending, g.LastDeliveredID, g.EntriesRead, g.Lag))
	}
	return strings.Join(states, "; ")
}
