package serve

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// benchRedis starts a redis-server for a benchmark and connects to it.
func benchRedis(b *testing.B) goredis.UniversalClient {
	r := testsupport.StartRedis(b, testsupport.RedisOptions{})
	client, err := stream.Connect(context.Background(), r.URL(), stream.ConnectOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { client.Close() })
	return client
}

// benchGroups makes n synthetic groups and their groups-stream payloads, as
// JSON or (groupFormat stream.GroupFormatBinaryName) in the binary group
// format.
func benchGroups(n, g, stepLen int, groupFormat string) ([]*traj.Group, [][]byte) {
	groups := make([]*traj.Group, n)
	payloads := make([][]byte, n)
	for i := range groups {
		groups[i] = trajtest.Synthetic("bench", i, g, stepLen)
		if groupFormat == stream.GroupFormatBinaryName {
			payloads[i], _ = wire.AppendGroupBinary(nil, groups[i])
		} else {
			payloads[i], _ = wire.EncodeGroup(groups[i])
		}
	}
	return groups, payloads
}

// BenchmarkServiceVsRaw measures, in one run against one redis-server, the
// groups/s of the whole service path (AddGroups with its idempotence script,
// then the service: XREADGROUP, decode, compute, encode, atomic commit), of
// raw XADD + XREADGROUP + XACK of the same payloads, and of the service's
// floor (its Redis operations with precomputed records), and reports the
// service's ratio to raw ("ratio") and to its floor ("service/floor").
//
// It runs once per group payload format and record format (sub-benchmarks
// groups=json/records=json, ..., groups=binary/records=binary): raw and the
// floor move the same payloads, and the floor commits the records the service
// writes in that format.
func BenchmarkServiceVsRaw(b *testing.B) {
	for _, groupFormat := range []string{stream.GroupFormatJSON, stream.GroupFormatBinaryName} {
		for _, format := range []string{RecordFormatJSON, RecordFormatBinary} {
			b.Run("groups="+groupFormat+"/records="+format, func(b *testing.B) { benchServiceVsRaw(b, groupFormat, format) })
		}
	}
}

func benchServiceVsRaw(b *testing.B, groupFormat, format string) {
	const n, g, stepLen, batch = 2000, 8, 64, 32
	client := benchRedis(b)
	ctx := context.Background()
	groups, payloads := benchGroups(n, g, stepLen, groupFormat)
	var tokens int64
	for i := range groups {
		for _, t := range groups[i].Trajectories {
			tokens += int64(t.ResponseLen())
		}
	}
	outputs := precomputedOutputs(b, groups, payloads, format)
	// From here the runs need only each group's id and version (and its
	// payload): drop the decoded groups, so that the garbage collector does
	// not mark 2000 groups the service itself would never hold.
	groups = idsOnly(groups)
	runtime.GC()
	b.ResetTimer()
	// Each of b.N rounds runs raw, service and floor in turn; the rates are
	// each side's best round (a shared machine's noise only slows a run
	// down), the CPU figures sums over all rounds.
	raw, svc, floor := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	var rawCPU, svcCPU, floorCPU cpuUse
	var svcGCs, floorGCs uint32 // garbage collections during the service and floor runs
	for iter := 0; iter < b.N; iter++ {
		if err := client.FlushAll(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		before := measureCPU(b, client)
		raw = min(raw, rawStreamRun(b, client, payloads, batch))
		mid := measureCPU(b, client)
		gcBefore := numGC()
		svc = min(svc, serviceRun(b, client, groups, payloads, batch, format))
		svcGCs += numGC() - gcBefore
		after := measureCPU(b, client)
		rawCPU = rawCPU.add(mid.sub(before))
		svcCPU = svcCPU.add(after.sub(mid))
		if err := client.FlushAll(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		beforeFloor := measureCPU(b, client)
		gcBefore = numGC()
		floor = min(floor, redisFloorRun(b, client, groups, payloads, outputs, batch))
		floorGCs += numGC() - gcBefore
		floorCPU = floorCPU.add(measureCPU(b, client).sub(beforeFloor))
	}
	b.StopTimer()
	rawRate := float64(n) / raw.Seconds()
	svcRate := float64(n) / svc.Seconds()
	b.ReportMetric(rawRate, "raw-groups/s")
	b.ReportMetric(svcRate, "service-groups/s")
	b.ReportMetric(svcRate/rawRate, "ratio")
	// The floor: the service's Redis operations alone (idempotent produce,
	// XREADGROUP, the gated commit of the very records the service writes),
	// with no decoding, computing or encoding. No codec can bring the
	// service's ratio above it.
	floorRate := float64(n) / floor.Seconds()
	b.ReportMetric(floorRate/rawRate, "floor-ratio")
	// The target (#18): the service at ≥ 0.8 of its floor.
	b.ReportMetric(svcRate/floorRate, "service/floor")
	b.Logf("best of %d rounds: service %.0f groups/s = %.2f of raw (%.0f), %.2f of its floor (%.0f groups/s; target ≥ 0.8)",
		b.N, svcRate, svcRate/rawRate, rawRate, svcRate/floorRate, floorRate)
	b.ReportMetric(float64(tokens)/svc.Seconds(), "service-tokens/s")
	b.ReportMetric(float64(svcGCs)/float64(b.N), "service-gcs/round")
	b.ReportMetric(float64(floorGCs)/float64(b.N), "floor-gcs/round")
	// CPU per group, of this process (client) and of redis-server: on a
	// shared machine these say more than the wall-clock rates.
	perGroup := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n*b.N) }
	b.ReportMetric(perGroup(rawCPU.client), "raw-client-cpu-µs/group")
	b.ReportMetric(perGroup(rawCPU.server), "raw-server-cpu-µs/group")
	b.ReportMetric(perGroup(svcCPU.client), "service-client-cpu-µs/group")
	b.ReportMetric(perGroup(svcCPU.server), "service-server-cpu-µs/group")
	b.ReportMetric(perGroup(floorCPU.client), "floor-client-cpu-µs/group")
	b.ReportMetric(perGroup(floorCPU.server), "floor-server-cpu-µs/group")
	// On a machine whose cores both sides saturate, service/floor cannot
	// exceed the floor's CPU per group over the service's.
	if svcCPU.client+svcCPU.server > 0 {
		b.ReportMetric(float64(floorCPU.client+floorCPU.server)/float64(svcCPU.client+svcCPU.server), "floor/service-cpu")
	}
	if svcCPU.client+svcCPU.server > 0 {
		b.ReportMetric(float64(rawCPU.client+rawCPU.server)/float64(svcCPU.client+svcCPU.server), "cpu-ratio")
	}
}

// idsOnly is groups with only their ids and policy versions.
func idsOnly(groups []*traj.Group) []*traj.Group {
	out := make([]*traj.Group, len(groups))
	for i, g := range groups {
		out[i] = &traj.Group{GroupID: g.GroupID, PolicyVersion: g.PolicyVersion}
	}
	return out
}

// numGC is the number of garbage collections this process has completed.
func numGC() uint32 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.NumGC
}

// cpuUse is CPU time used by this process (client) and by redis-server.
type cpuUse struct{ client, server time.Duration }

func (a cpuUse) add(b cpuUse) cpuUse { return cpuUse{a.client + b.client, a.server + b.server} }
func (a cpuUse) sub(b cpuUse) cpuUse { return cpuUse{a.client - b.client, a.server - b.server} }

// measureCPU reads this process's CPU time and redis-server's (INFO cpu:
// used_cpu_user + used_cpu_sys).
func measureCPU(b testing.TB, client goredis.UniversalClient) cpuUse {
	info, err := client.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var server float64
	for _, line := range strings.Split(info, "\n") {
		name, value, _ := strings.Cut(strings.TrimSpace(line), ":")
		if name == "used_cpu_user" || name == "used_cpu_sys" {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				b.Fatalf("INFO cpu %s: %v", line, err)
			}
			server += v
		}
	}
	return cpuUse{client: processCPU(), server: time.Duration(server * float64(time.Second))}
}

// rawStreamRun XADDs the payloads (pipelined, batch per round trip), then
// reads them back with XREADGROUP COUNT batch and XACKs each batch.
func rawStreamRun(b testing.TB, client goredis.UniversalClient, payloads [][]byte, batch int) time.Duration {
	ctx := context.Background()
	const key = "raw"
	start := time.Now()
	if err := client.XGroupCreateMkStream(ctx, key, "g", "0").Err(); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(payloads); i += batch {
		pipe := client.Pipeline()
		for _, p := range payloads[i:min(i+batch, len(payloads))] {
			pipe.XAdd(ctx, &goredis.XAddArgs{Stream: key, Values: []any{stream.FieldGroup, p}})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for read := 0; read < len(payloads); {
		res, err := client.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{key, ">"},
			Count: int64(batch), Block: time.Second}).Result()
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]string, 0, batch)
		for _, m := range res[0].Messages {
			ids = append(ids, m.ID)
		}
		if err := client.XAck(ctx, key, "g", ids...).Err(); err != nil {
			b.Fatal(err)
		}
		read += len(ids)
	}
	return time.Since(start)
}

// serviceRun adds the same payloads with Producer.AddGroupPayloads (the
// idempotent script) and runs the service until every group is done.
func serviceRun(b testing.TB, client goredis.UniversalClient, groups []*traj.Group, payloads [][]byte, batch int, format string) time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := advantage.DefaultConfig()
	cfg.Mode, cfg.KL = advantage.ModeHybrid, advantage.KLK3
	svc, err := New(client, Options{Job: "bench", Config: cfg, Workers: 2, Batch: int64(batch), Block: 10 * time.Millisecond, RecordFormat: format})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	produceBenchGroups(ctx, b, client, groups, payloads, batch)
	produced := time.Since(start)
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	for doneCount(client, "bench") < int64(len(groups)) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.Logf("service: produce %v, consume %v", produced, elapsed-produced)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return elapsed
}

// precomputedOutputs is, per group, the output the service commits for it:
// the floor run writes these without computing anything.
func precomputedOutputs(b testing.TB, groups []*traj.Group, payloads [][]byte, format string) map[string]stream.Output {
	cfg := advantage.DefaultConfig()
	cfg.Mode, cfg.KL = advantage.ModeHybrid, advantage.KLK3
	cfg.MaxStaleness = -1
	svc, err := New(nil, Options{Job: "bench", Config: cfg, RecordFormat: format})
	if err != nil {
		b.Fatal(err)
	}
	outs := make(map[string]stream.Output, len(groups))
	for i, g := range groups {
		m := stream.Message{Values: map[string]any{stream.FieldGroup: string(payloads[i]), stream.FieldGroupID: g.GroupID}}
		if wire.IsGroupBinary(payloads[i]) {
			m.Values[stream.FieldFormat] = stream.GroupFormatBinary
		}
		out, _, err := svc.compute(m, cfg)
		if err != nil {
			b.Fatal(err)
		}
		outs[g.GroupID] = out
	}
	return outs
}

// produceBenchGroups adds the payloads with Producer.AddGroupPayloads (the
// idempotent transaction), batch groups per call, as a rollout sink does.
func produceBenchGroups(ctx context.Context, b testing.TB, client goredis.UniversalClient, groups []*traj.Group, payloads [][]byte, batch int) {
	p := stream.NewProducer(client, stream.ProducerOptions{MaxBacklog: -1})
	for i := 0; i < len(groups); i += batch {
		var gp []stream.GroupPayload
		for k := i; k < min(i+batch, len(groups)); k++ {
			gp = append(gp, stream.GroupPayload{GroupID: groups[k].GroupID, PolicyVersion: groups[k].PolicyVersion, JSON: payloads[k]})
		}
		if _, err := p.AddGroupPayloads(ctx, "bench", gp); err != nil {
			b.Fatal(err)
		}
	}
}

// redisFloorRun does what serviceRun does with Redis, in the same shape (the
// producer's idempotent adds, then two workers reading batches and
// committing them), but commits precomputed outputs instead of computing
// them.
func redisFloorRun(b testing.TB, client goredis.UniversalClient, groups []*traj.Group, payloads [][]byte,
	outputs map[string]stream.Output, batch int) time.Duration {
	ctx := context.Background()
	keys := stream.JobKeys("bench")
	start := time.Now()
	produceBenchGroups(ctx, b, client, groups, payloads, batch)
	var done atomic.Int64
	var wg errgroup.Group
	for w := range 2 {
		c, err := stream.NewConsumer(client, stream.ConsumerOptions{Stream: keys.Groups, Group: stream.AdvantageGroup,
			Consumer: fmt.Sprint("floor-", w), DeadLetter: keys.Dead, Count: int64(batch), Block: 10 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.EnsureGroup(ctx); err != nil {
			b.Fatal(err)
		}
		wg.Go(func() error {
			for done.Load() < int64(len(groups)) {
				msgs, err := c.Read(ctx)
				if err != nil {
					return err
				}
				batchOut := make([]stream.Output, len(msgs))
				for i, m := range msgs {
					batchOut[i] = outputs[m.Values[stream.FieldGroupID].(string)]
					batchOut[i].ID = m.ID
				}
				if len(batchOut) > 0 {
					if _, err := c.Commit(ctx, keys.GroupsDone, keys.Advantages, batchOut); err != nil {
						return err
					}
				}
				done.Add(int64(len(msgs)))
			}
			return nil
		})
	}
	if err := wg.Wait(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkServiceFloorVariants asks what another advantages-stream layout
// would buy: the floor run (the service's Redis operations with precomputed
// output, no codec or math) with the records as shipped (one entry per
// trajectory), with one entry per group holding the same bytes, and with one
// entry per group of half those bytes (as a binary encoding of the arrays
// might give). It reports each floor's groups/s over raw's, best of seven
// interleaved runs of each (a shared machine's noise only slows runs down).
func BenchmarkServiceFloorVariants(b *testing.B) {
	const n, g, stepLen, batch, rounds = 2000, 8, 64, 32, 7
	client := benchRedis(b)
	ctx := context.Background()
	groups, payloads := benchGroups(n, g, stepLen, stream.GroupFormatJSON)
	perTraj := precomputedOutputs(b, groups, payloads, RecordFormatJSON)
	perGroup := func(frac float64) map[string]stream.Output {
		m := make(map[string]stream.Output, len(perTraj))
		for id, o := range perTraj {
			var records []byte
			for _, e := range o.Entries {
				records = append(records, e[len(e)-1].Value...)
			}
			records = records[:int(float64(len(records))*frac)]
			m[id] = stream.Output{Done: o.Done, Entries: [][]stream.Field{{
				{Name: stream.FieldGroupID, Value: []byte(id)}, {Name: "records", Value: records}}}}
		}
		return m
	}
	variants := []struct {
		name    string
		outputs map[string]stream.Output
	}{{"per-trajectory", perTraj}, {"per-group", perGroup(1)}, {"per-group-half-bytes", perGroup(0.5)}}
	b.ResetTimer()
	for iter := 0; iter < b.N; iter++ {
		bestRaw := time.Duration(math.MaxInt64)
		best := make([]time.Duration, len(variants))
		for round := 0; round < rounds; round++ {
			if err := client.FlushAll(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			bestRaw = min(bestRaw, rawStreamRun(b, client, payloads, batch))
			for i, v := range variants {
				if err := client.FlushAll(ctx).Err(); err != nil {
					b.Fatal(err)
				}
				d := redisFloorRun(b, client, groups, payloads, v.outputs, batch)
				if round == 0 || d < best[i] {
					best[i] = d
				}
			}
		}
		for i, v := range variants {
			b.ReportMetric(bestRaw.Seconds()/best[i].Seconds(), v.name+"-floor-ratio")
		}
	}
}

// BenchmarkServiceDecode is the service's per-group decode (lean codec, strict,
// validated) of one benchmark group (8 × 288 tokens, 60 KB).
func BenchmarkServiceDecode(b *testing.B) {
	data, err := wire.EncodeGroup(trajtest.Synthetic("bench", 1, 8, 64))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		if _, _, err := wire.DecodeGroupArrays(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServiceComputeEncode is advantage.Compute (hybrid, k3) plus writing the
// group's 8 records.
func BenchmarkServiceComputeEncode(b *testing.B) {
	data, err := wire.EncodeGroup(trajtest.Synthetic("bench", 1, 8, 64))
	if err != nil {
		b.Fatal(err)
	}
	g, raws, err := wire.DecodeGroupArrays(data)
	if err != nil {
		b.Fatal(err)
	}
	cfg := advantage.DefaultConfig()
	cfg.Mode, cfg.KL = advantage.ModeHybrid, advantage.KLK3
	var buf []byte
	for i := 0; i < b.N; i++ {
		recs, _, err := advantage.Compute(g, cfg)
		if err != nil {
			b.Fatal(err)
		}
		for k := range recs {
			if buf, err = wire.AppendRecord(buf[:0], &recs[k], &raws[k]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkServiceDecodeBinary is BenchmarkServiceDecode for the binary group
// format (the arrays read as views, the header's JSON parsed, validated).
func BenchmarkServiceDecodeBinary(b *testing.B) {
	data, err := wire.AppendGroupBinary(nil, trajtest.Synthetic("bench", 1, 8, 64))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		if _, _, err := wire.DecodeGroupPayload(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServiceGroup is the service's whole per-group work (decode,
// compute, the output entries' fields) on one benchmark group, per group
// payload format and record format: what the service adds to its floor's
// Redis operations.
func BenchmarkServiceGroup(b *testing.B) {
	cfg := advantage.DefaultConfig()
	cfg.Mode, cfg.KL = advantage.ModeHybrid, advantage.KLK3
	for _, groupFormat := range []string{stream.GroupFormatJSON, stream.GroupFormatBinaryName} {
		for _, format := range []string{RecordFormatJSON, RecordFormatBinary} {
			b.Run("groups="+groupFormat+"/records="+format, func(b *testing.B) {
				groups, payloads := benchGroups(1, 8, 64, groupFormat)
				svc, err := New(nil, Options{Job: "bench", Config: cfg, RecordFormat: format})
				if err != nil {
					b.Fatal(err)
				}
				m := stream.Message{ID: "1-0", Values: map[string]any{stream.FieldGroup: string(payloads[0]), stream.FieldGroupID: groups[0].GroupID}}
				if groupFormat == stream.GroupFormatBinaryName {
					m.Values[stream.FieldFormat] = stream.GroupFormatBinary
				}
				b.ReportAllocs()
				var sc advantage.Scratch // one, reused, as the service's pool gives
				for i := 0; i < b.N; i++ {
					decoded := svc.decode(m)
					if decoded.err != nil {
						b.Fatal(decoded.err)
					}
					if _, _, err := svc.computeGroup(&decoded, cfg, &sc); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
