package advantage

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// syntheticGroup is a realistic-sized group: g trajectories with a prompt of
// min(32, stepLen) tokens and a response of three model steps of stepLen tokens separated by
// two tool results of stepLen/2 tokens, with reference logprobs and step
// rewards.
func syntheticGroup(job string, i, g, stepLen int) *traj.Group {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	prompt := fmt.Sprintf("p%07d", i)
	trs := make([]traj.Trajectory, g)
	for k := range trs {
		temperature := 1.0
		t := traj.Trajectory{
			Schema: traj.TrajectorySchema, ID: traj.TrajectoryID(job, prompt, 0, k), JobID: job, PromptID: prompt,
			GroupID: traj.GroupID(job, prompt, 0), GroupSize: g, SampleIndex: k, PolicyVersion: 1, Seed: rng.Uint64(), Temperature: &temperature,
			Model: traj.ModelRef{Name: "synthetic"}, PromptLen: min(32, stepLen), FinishReason: traj.FinishStop,
		}
		// The rollout's rewards: the parts sum to the total, and so do the
		// step rewards (the outcome is paid to the last step).
		outcome := float64(rng.IntN(2))
		t.Reward = traj.Reward{Total: outcome - 0.2, Parts: map[string]float64{"outcome": outcome, "call_cost": -0.2}}
		for j := 0; j < t.PromptLen; j++ {
			t.Tokens = append(t.Tokens, int32(rng.IntN(32000)))
		}
		pos := 0
		for s := 0; s < 3; s++ {
			t.Segments = append(t.Segments, traj.Segment{Kind: traj.SegmentModel, Turn: s, Start: pos, End: pos + stepLen})
			for j := 0; j < stepLen; j++ {
				t.Tokens = append(t.Tokens, int32(rng.IntN(32000)))
				t.LossMask = append(t.LossMask, 1)
				t.Logprobs = append(t.Logprobs, -float32(rng.ExpFloat64()))
				t.RefLogprobs = append(t.RefLogprobs, -float32(rng.ExpFloat64()))
			}
			pos += stepLen
			t.StepRewards = append(t.StepRewards, -0.1)
			if s < 2 {
				n := stepLen / 2
				t.Segments = append(t.Segments, traj.Segment{Kind: traj.SegmentTool, Turn: s, Start: pos, End: pos + n,
					Result: &traj.ToolResult{OK: true, Content: "42"}})
				for j := 0; j < n; j++ {
					t.Tokens = append(t.Tokens, int32(rng.IntN(32000)))
					t.LossMask = append(t.LossMask, 0)
					t.Logprobs = append(t.Logprobs, 0)
					t.RefLogprobs = append(t.RefLogprobs, 0)
				}
				pos += n
			}
		}
		t.StepRewards[2] = outcome
		trs[k] = t
	}
	gr := traj.NewGroup(trs)
	return &gr
}

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

// benchGroups makes n synthetic groups and their groups-stream payloads.
func benchGroups(n, g, stepLen int) ([]*traj.Group, [][]byte) {
	groups := make([]*traj.Group, n)
	payloads := make([][]byte, n)
	for i := range groups {
		groups[i] = syntheticGroup("bench", i, g, stepLen)
		payloads[i], _ = wire.EncodeGroup(groups[i])
	}
	return groups, payloads
}

// BenchmarkServiceVsRaw measures, in one run against one redis-server, the
// groups/s of the whole service path (AddGroups with its idempotence script,
// then the service: XREADGROUP, decode, compute, encode, atomic commit) and
// of raw XADD + XREADGROUP + XACK of the same payloads, and reports their
// ratio.
func BenchmarkServiceVsRaw(b *testing.B) {
	const n, g, stepLen, batch = 2000, 8, 64, 32
	client := benchRedis(b)
	ctx := context.Background()
	groups, payloads := benchGroups(n, g, stepLen)
	var tokens int64
	for i := range groups {
		for _, t := range groups[i].Trajectories {
			tokens += int64(t.ResponseLen())
		}
	}
	outputs := precomputedOutputs(b, groups, payloads)
	b.ResetTimer()
	var raw, svc, floor time.Duration
	var rawCPU, svcCPU cpuUse
	for iter := 0; iter < b.N; iter++ {
		if err := client.FlushAll(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		before := measureCPU(b, client)
		raw += rawStreamRun(b, client, payloads, batch)
		mid := measureCPU(b, client)
		svc += serviceRun(b, client, groups, payloads, batch)
		after := measureCPU(b, client)
		rawCPU = rawCPU.add(mid.sub(before))
		svcCPU = svcCPU.add(after.sub(mid))
		if err := client.FlushAll(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		floor += redisFloorRun(b, client, groups, payloads, outputs, batch)
	}
	b.StopTimer()
	rawRate := float64(n*b.N) / raw.Seconds()
	svcRate := float64(n*b.N) / svc.Seconds()
	b.ReportMetric(rawRate, "raw-groups/s")
	b.ReportMetric(svcRate, "service-groups/s")
	b.ReportMetric(svcRate/rawRate, "ratio")
	// The floor: the service's Redis operations alone (idempotent produce,
	// XREADGROUP, the gated commit of the very records the service writes),
	// with no decoding, computing or encoding. No codec can bring the
	// service's ratio above it.
	b.ReportMetric((float64(n*b.N)/floor.Seconds())/rawRate, "floor-ratio")
	b.ReportMetric(float64(tokens*int64(b.N))/svc.Seconds(), "service-tokens/s")
	// CPU per group, of this process (client) and of redis-server: on a
	// shared machine these say more than the wall-clock rates.
	perGroup := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n*b.N) }
	b.ReportMetric(perGroup(rawCPU.client), "raw-client-cpu-µs/group")
	b.ReportMetric(perGroup(rawCPU.server), "raw-server-cpu-µs/group")
	b.ReportMetric(perGroup(svcCPU.client), "service-client-cpu-µs/group")
	b.ReportMetric(perGroup(svcCPU.server), "service-server-cpu-µs/group")
	if svcCPU.client+svcCPU.server > 0 {
		b.ReportMetric(float64(rawCPU.client+rawCPU.server)/float64(svcCPU.client+svcCPU.server), "cpu-ratio")
	}
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
func serviceRun(b testing.TB, client goredis.UniversalClient, groups []*traj.Group, payloads [][]byte, batch int) time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := DefaultConfig()
	cfg.Mode, cfg.KL = ModeHybrid, KLK3
	svc, err := NewService(client, ServiceOptions{Job: "bench", Config: cfg, Workers: 2, Batch: int64(batch), Block: 10 * time.Millisecond})
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
func precomputedOutputs(b testing.TB, groups []*traj.Group, payloads [][]byte) map[string]stream.Output {
	cfg := DefaultConfig()
	cfg.Mode, cfg.KL = ModeHybrid, KLK3
	cfg.MaxStaleness = -1
	svc, err := NewService(nil, ServiceOptions{Job: "bench", Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	outs := make(map[string]stream.Output, len(groups))
	for i, g := range groups {
		m := stream.Message{Values: map[string]any{stream.FieldGroup: string(payloads[i]), stream.FieldGroupID: g.GroupID}}
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
	groups, payloads := benchGroups(n, g, stepLen)
	perTraj := precomputedOutputs(b, groups, payloads)
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

// BenchmarkOffline measures offline tokens/s: a JSONL file of trajectories
// (members of a group spread over a window of 64 groups) through Offline to
// a JSONL file of advantage records.
func BenchmarkOffline(b *testing.B) {
	dir := b.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	tokens, err := WriteSyntheticTrajectories(in, 20000, 8, 64)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Mode, cfg.KL = ModeHybrid, KLK3
	b.ResetTimer()
	start := time.Now()
	for iter := 0; iter < b.N; iter++ {
		src, err := export.OpenTrajectories(in)
		if err != nil {
			b.Fatal(err)
		}
		dst, err := export.CreateAdvantages(filepath.Join(dir, "out.jsonl"), export.WriterOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Offline(context.Background(), src, dst, OfflineOptions{Config: cfg}); err != nil {
			b.Fatal(err)
		}
		src.Close()
		if err := dst.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tokens*int64(b.N))/time.Since(start).Seconds(), "tokens/s")
}

// WriteSyntheticTrajectories writes n trajectories (groups of g, steps of
// stepLen tokens) to path as JSONL, each group's members spread over a window
// of 64 groups so that they are not contiguous, and returns the response
// tokens written. It is exported for the test that generates big inputs.
func WriteSyntheticTrajectories(path string, n, g, stepLen int) (int64, error) {
	w, err := export.CreateTrajectories(path, export.WriterOptions{})
	if err != nil {
		return 0, err
	}
	const window = 64
	rng := rand.New(rand.NewPCG(1, 1))
	var tokens int64
	var open [][]traj.Trajectory // members of the groups in the window, not yet written
	next, written := 0, 0
	for written < n {
		for len(open) < window && next*g < n {
			open = append(open, syntheticGroup("synthetic", next, g, stepLen).Trajectories)
			next++
		}
		k := rng.IntN(len(open))
		t := open[k][0]
		open[k] = open[k][1:]
		if len(open[k]) == 0 {
			open[k] = open[len(open)-1]
			open = open[:len(open)-1]
		}
		if err := w.Write(t); err != nil {
			w.Close()
			return 0, err
		}
		tokens += int64(t.ResponseLen())
		written++
	}
	return tokens, w.Close()
}

// TestWriteSyntheticTrajectories writes a big input for measuring the
// offline command's memory, only when asked:
//
//	TOOLRL_SYNTHETIC=/tmp/1m.jsonl:1000000 go test ./advantage -run TestWriteSyntheticTrajectories
func TestWriteSyntheticTrajectories(t *testing.T) {
	spec := os.Getenv("TOOLRL_SYNTHETIC")
	if spec == "" {
		t.Skip("set TOOLRL_SYNTHETIC=PATH:N to write N synthetic trajectories to PATH")
	}
	path, count, ok := strings.Cut(spec, ":")
	n, err := strconv.Atoi(count)
	if !ok || err != nil {
		t.Fatalf("TOOLRL_SYNTHETIC=%q, want PATH:N", spec)
	}
	tokens, err := WriteSyntheticTrajectories(path, n, 8, 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d trajectories, %d response tokens, to %s", n, tokens, path)
}

// BenchmarkServiceDecode is the service's per-group decode (lean codec, strict,
// validated) of one benchmark group (8 × 288 tokens, 60 KB).
func BenchmarkServiceDecode(b *testing.B) {
	data, err := wire.EncodeGroup(syntheticGroup("bench", 1, 8, 64))
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

// BenchmarkServiceComputeEncode is Compute (hybrid, k3) plus writing the
// group's 8 records.
func BenchmarkServiceComputeEncode(b *testing.B) {
	data, err := wire.EncodeGroup(syntheticGroup("bench", 1, 8, 64))
	if err != nil {
		b.Fatal(err)
	}
	g, raws, err := wire.DecodeGroupArrays(data)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Mode, cfg.KL = ModeHybrid, KLK3
	var buf []byte
	for i := 0; i < b.N; i++ {
		recs, _, err := Compute(g, cfg)
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
