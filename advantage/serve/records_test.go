package serve

import (
	"context"
	encjson "encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// The service's path (wire.DecodeGroupArrays, advantage.Compute,
// wire.AppendRecord with the raw arrays spliced in) writes every mode's
// records byte for byte as encoding/json does, from groups with every codec
// corner trajtest draws.
func TestServiceRecordsMatchEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	svc := &Service{opts: Options{Job: "job"}}
	modes := []advantage.Mode{advantage.ModeOutcome, advantage.ModeProcess, advantage.ModeHybrid, advantage.ModeStepGroup, advantage.ModeTurns}
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

// With RecordFormat binary the service writes the same records:
// stream.DecodeRecordEntry reads each entry back to what the JSON format's
// entry decodes to.
func TestServiceBinaryRecordsMatchJSON(t *testing.T) {
	cfg := advantage.DefaultConfig()
	cfg.Mode, cfg.KL = advantage.ModeHybrid, advantage.KLK3
	entryOf := func(fields []stream.Field) stream.Message {
		m := stream.Message{ID: "2-0", Values: map[string]any{}}
		for _, f := range fields {
			m.Values[f.Name] = string(f.Value)
		}
		return m
	}
	for i := 0; i < 8; i++ {
		g := streamGroup("job", i)
		payload, err := encjson.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		m := stream.Message{ID: "1-0", Values: map[string]any{stream.FieldGroup: string(payload), stream.FieldGroupID: g.GroupID}}
		var outs [2]stream.Output
		for k, format := range []string{RecordFormatJSON, RecordFormatBinary} {
			svc, err := New(nil, Options{Job: "job", Config: cfg, RecordFormat: format})
			if err != nil {
				t.Fatal(err)
			}
			if outs[k], _, err = svc.compute(m, cfg); err != nil {
				t.Fatal(err)
			}
		}
		for j := range outs[0].Entries {
			want, err := stream.DecodeRecordEntry(entryOf(outs[0].Entries[j]))
			if err != nil {
				t.Fatal(err)
			}
			bin := entryOf(outs[1].Entries[j])
			if bin.Values[stream.FieldFormat] != stream.RecordFormatBinary {
				t.Fatalf("group %d record %d: format %v", i, j, bin.Values[stream.FieldFormat])
			}
			got, err := stream.DecodeRecordEntry(bin)
			if err != nil {
				t.Fatalf("group %d record %d: %v", i, j, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("group %d record %d: binary entry decodes to\n%+v\nJSON entry to\n%+v", i, j, got, want)
			}
		}
	}
	if _, err := New(nil, Options{Job: "job", Config: cfg, RecordFormat: "msgpack"}); err == nil || !strings.Contains(err.Error(), "msgpack") {
		t.Errorf("unknown record format accepted: %v", err)
	}
}

// A group in the binary group format gives the same output entries, byte for
// byte, as its JSON, in either record format; a binary payload without the
// format field is refused, naming the field.
func TestServiceBinaryGroupsMatchJSON(t *testing.T) {
	cfg := advantage.DefaultConfig()
	cfg.Mode, cfg.KL = advantage.ModeHybrid, advantage.KLK3
	for _, format := range []string{RecordFormatJSON, RecordFormatBinary} {
		svc, err := New(nil, Options{Job: "job", Config: cfg, RecordFormat: format})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 10; i++ {
			g := streamGroup("job", i)
			js, err := wire.EncodeGroup(g)
			if err != nil {
				t.Fatal(err)
			}
			bin, err := wire.AppendGroupBinary(nil, g)
			if err != nil {
				t.Fatal(err)
			}
			want, _, err := svc.compute(stream.Message{ID: "1-0", Values: map[string]any{stream.FieldGroup: string(js), stream.FieldGroupID: g.GroupID}}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			binMsg := stream.Message{ID: "1-0", Values: map[string]any{stream.FieldGroup: string(bin), stream.FieldGroupID: g.GroupID,
				stream.FieldFormat: stream.GroupFormatBinary}}
			got, _, err := svc.compute(binMsg, cfg)
			if err != nil {
				t.Fatalf("%s group %d: %v", format, i, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s group %d: the binary group's output differs from the JSON group's", format, i)
			}
			delete(binMsg.Values, stream.FieldFormat)
			if _, _, err := svc.compute(binMsg, cfg); err == nil || !strings.Contains(err.Error(), "field format is absent") {
				t.Fatalf("binary payload without the format field: %v", err)
			}
		}
	}
}

// TestServiceBinaryRecordsAcrossBatches runs the service with binary records
// and small batches against a real redis-server, so that each batch's
// advantage.Scratch memory comes back from the pool and is reused by the
// next: every committed record's advantages, KL and spans must still be
// its own group's (advantage.Compute on the group, bit for bit), as a
// scratch released before its batch's commit would break.
func TestServiceBinaryRecordsAcrossBatches(t *testing.T) {
	const job, n = "scratchjob", 60
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connectTest(t, r.URL())
	opts := testServiceOptions(job)
	opts.RecordFormat, opts.Batch = RecordFormatBinary, 4
	svc, err := New(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := produce(context.Background(), client, job, n, 1000); err != nil {
		t.Fatal(err)
	}
	_, cancel, done := startRun(t, svc)
	waitFor(t, "all groups done", 60*time.Second, func() bool { return doneCount(client, job) == n })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cfg := opts.Config
	cfg.MaxStaleness = -1 // no policy_version key: the service checks no staleness
	want := map[string]traj.AdvantageRecord{}
	for i := 0; i < n; i++ {
		recs, _, err := advantage.Compute(streamGroup(job, i), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			want[rec.TrajectoryID] = rec
		}
	}
	msgs, err := client.XRange(context.Background(), stream.JobKeys(job).Advantages, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != len(want) {
		t.Fatalf("%d records, want %d", len(msgs), len(want))
	}
	for _, m := range msgs {
		got, err := stream.DecodeRecordEntry(stream.Message{ID: m.ID, Values: m.Values})
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[got.TrajectoryID]
		if !ok {
			t.Fatalf("record %s: no such trajectory", got.TrajectoryID)
		}
		if !reflect.DeepEqual(got.Advantages, w.Advantages) || !reflect.DeepEqual(got.KL, w.KL) || !reflect.DeepEqual(got.Segments, w.Segments) {
			t.Fatalf("record %s: advantages, KL or spans are not its group's", got.TrajectoryID)
		}
	}
}
