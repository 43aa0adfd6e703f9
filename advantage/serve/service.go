// Package serve is the advantage service: it consumes a job's groups stream
// (stream.JobKeys) with consumer group "advantage", computes each group's
// advantage records (advantage.Compute), and writes them to the advantages
// stream, marks the group done and acknowledges its entry in one atomic
// step, so output is exactly once. Entries that cannot be decoded (traj/wire,
// strict) or computed go to the dead letters with the reason. It exposes
// Prometheus metrics and a health check (Service.Handler).
package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/internal/metricsserver"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// Options configures a Service. Job is required; the rest have the
// documented defaults.
type Options struct {
	// Job names the job whose streams are used (stream.JobKeys).
	Job string
	// Config is the advantage math. CurrentPolicyVersion is ignored: the
	// service reads the trainer's version from the job's policy_version key
	// (when the key is missing, nothing is stale).
	Config advantage.Config
	// Workers is the number of consumers run concurrently; 0 means 2.
	Workers int
	// Batch is the most groups one worker reads and commits at once; 0 means 32.
	Batch int64
	// Block is how long a read waits for new groups; 0 means 1 s.
	Block time.Duration
	// ClaimIdle is how long a group may stay pending with a consumer (e.g. one
	// that died) before another takes it; 0 means 30 s.
	ClaimIdle time.Duration
	// MaxDeliveries sends a group delivered more often to the dead letters;
	// 0 means 5.
	MaxDeliveries int64
	// ConsumerName prefixes the consumers' names; "" means hostname-pid.
	// Each worker appends "-<n>".
	ConsumerName string
	// MetricsInterval is how often health, the policy version and the
	// streams' depths (length, pending and lag per consumer group) are
	// refreshed; 0 means 1 s.
	MetricsInterval time.Duration
	// Registry receives the service's metrics and is what Handler serves;
	// nil means a new one of the service's own (metricsserver.NewRegistry,
	// with the Go and process collectors and an unknown build).
	Registry *prometheus.Registry
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// RefScorer, when set, scores the trajectories that arrive without
	// ref_log_prob (actor.Policy is one; it must be safe for concurrent use,
	// as every worker calls it), batched over each read batch, before their
	// advantages and KL are computed. nil leaves them without references.
	RefScorer advantage.RefScorer
	// RefTemperature is the temperature RefScorer scores trajectories that
	// record none at (v1 data); 0 means 1. The others are scored at their
	// own (advantage.ReferenceTemperature).
	RefTemperature float64
	// StartRetry is how long Run keeps retrying, on connection errors
	// (stream.IsTransient), to create its consumer group before it gives up
	// with an error; 0 means stream.DefaultWriteRetry.
	StartRetry time.Duration
	// RefBatch is the most sequences per RefScorer call; 0 means 16.
	RefBatch int
	// MaxOutputBacklog is the most unconsumed records (pending plus
	// undelivered) the advantages stream may hold for its slowest consumer
	// group before the workers stop reading groups and wait for the
	// trainers. Backpressure then reaches the rollouts through the groups
	// stream's own limit. While the stream has no consumer group nothing is
	// counted: readers that use XRANGE (toolrl export) are not tracked. A
	// trainer group that is abandoned holds the service until it is
	// destroyed (XGROUP DESTROY). 0 means 80000 (the producer's 10000
	// groups, of 8); negative disables the wait.
	MaxOutputBacklog int64
	// RecordFormat is how records are written to the advantages stream: ""
	// or "json" (the record field holds the record's JSON) or
	// stream.RecordFormatBinary's "binary" (the JSON without the per-token
	// arrays, which are fields of their own, little-endian; see
	// docs/redis.md). stream.DecodeRecordEntry reads both.
	RecordFormat string
	// TrimConsumed makes the service delete, every metrics interval, the
	// entries of the groups and advantages streams that every consumer group
	// has acknowledged (stream.TrimConsumed), so that a long job's Redis
	// memory stays bounded. Off by default: readers outside consumer groups
	// (XRANGE, toolrl export) no longer see trimmed entries.
	TrimConsumed bool
}

// The values of Options.RecordFormat.
const (
	RecordFormatJSON   = "json"
	RecordFormatBinary = "binary" // stream.RecordFormatBinary
)

// Service is the advantage service: it consumes a job's groups stream with
// consumer group "advantage" and, for each group, writes its advantage records
// to the advantages stream, marks the group done and acknowledges the entry in
// one atomic step. Entries that cannot be decoded or computed go to the dead
// letters with the reason.
type Service struct {
	client goredis.UniversalClient
	opts   Options
	keys   stream.Keys
	log    *slog.Logger
	m      *metrics
	reg    *prometheus.Registry // what Handler serves

	committed     atomic.Int64 // groups committed, for groups/s
	policyVersion atomic.Int64
	policyKnown   atomic.Bool
	healthMu      sync.Mutex
	healthErr     error
	healthAt      time.Time

	// scratch holds *advantage.Scratch: a batch takes one per group and
	// puts them back once its records are committed (binary records' arrays
	// are views of them until then).
	scratch sync.Pool
}

// New checks the options and returns a service over client; Run
// starts it.
func New(client goredis.UniversalClient, opts Options) (*Service, error) {
	if err := stream.ValidateJob(opts.Job); err != nil {
		return nil, err
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.Batch <= 0 {
		opts.Batch = 32
	}
	if opts.MetricsInterval <= 0 {
		opts.MetricsInterval = time.Second
	}
	if opts.ConsumerName == "" {
		host, _ := os.Hostname()
		opts.ConsumerName = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RefTemperature == 0 {
		opts.RefTemperature = 1
	}
	if opts.StartRetry == 0 {
		opts.StartRetry = stream.DefaultWriteRetry
	}
	if opts.RefBatch <= 0 {
		opts.RefBatch = 16
	}
	if opts.MaxOutputBacklog == 0 {
		opts.MaxOutputBacklog = 80000
	}
	switch opts.RecordFormat {
	case "", RecordFormatJSON:
		opts.RecordFormat = RecordFormatJSON
	case RecordFormatBinary:
	default:
		return nil, fmt.Errorf("advantage service: record format %q, want %q or %q", opts.RecordFormat, RecordFormatJSON, RecordFormatBinary)
	}
	s := &Service{client: client, opts: opts, keys: stream.JobKeys(opts.Job), log: opts.Logger}
	s.reg = opts.Registry
	if s.reg == nil {
		s.reg = metricsserver.NewRegistry(metricsserver.Build{})
	}
	m, err := newMetrics(s.reg)
	if err != nil {
		return nil, fmt.Errorf("advantage service: register metrics: %w", err)
	}
	s.m = m
	return s, nil
}

// Handler serves /metrics (Prometheus, from the service's registry) and
// /healthz (200 while the last Redis check succeeded, 503 otherwise).
func (s *Service) Handler() http.Handler {
	return metricsserver.Handler(s.reg, s.Healthy)
}

// Healthy returns nil when the last Redis check (every MetricsInterval)
// succeeded, else what failed.
func (s *Service) Healthy() error {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	if s.healthAt.IsZero() {
		return errors.New("not started")
	}
	return s.healthErr
}

func (s *Service) setHealth(err error) {
	s.healthMu.Lock()
	s.healthErr, s.healthAt = err, time.Now()
	s.healthMu.Unlock()
}

// Run consumes until ctx is cancelled, then lets every worker finish and
// commit the batch it holds (graceful shutdown) and returns nil. Redis errors
// are logged and retried (stream.Backoff) for as long as they last; Run
// returns an error only when it cannot start: the consumer group could not
// be created within StartRetry of Redis failures.
func (s *Service) Run(ctx context.Context) error {
	consumers := make([]*stream.Consumer, s.opts.Workers)
	for i := range consumers {
		c, err := stream.NewConsumer(s.client, stream.ConsumerOptions{
			Stream: s.keys.Groups, Group: stream.AdvantageGroup, Consumer: fmt.Sprintf("%s-%d", s.opts.ConsumerName, i),
			DeadLetter: s.keys.Dead, Count: s.opts.Batch, Block: s.opts.Block, ClaimIdle: s.opts.ClaimIdle,
			MaxDeliveries: s.opts.MaxDeliveries,
		})
		if err != nil {
			return err
		}
		consumers[i] = c
	}
	start := stream.Retry{For: s.opts.StartRetry, OnRetry: func(err error, wait time.Duration) {
		s.log.Warn("create consumer group", "err", err, "retry_in", wait)
	}}
	if err := start.Do(ctx, func() error { return consumers[0].EnsureGroup(ctx) }); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("create consumer group %s on %s: %w", stream.AdvantageGroup, s.keys.Groups, err)
	}
	s.log.Info("advantage service started", "job", s.opts.Job, "stream", s.keys.Groups, "workers", s.opts.Workers,
		"mode", s.opts.Config.Mode, "estimator", s.opts.Config.Estimator, "kl", s.opts.Config.KL, "ref_scorer", s.opts.RefScorer != nil)
	s.refresh(ctx)
	s.prune(ctx, consumers[0])

	g, gctx := errgroup.WithContext(ctx)
	for _, c := range consumers {
		g.Go(func() error { s.work(gctx, c); return nil })
	}
	g.Go(func() error { s.monitor(gctx, consumers[0]); return nil })
	err := g.Wait()
	s.log.Info("advantage service stopped", "job", s.opts.Job, "groups", s.committed.Load())
	return err
}

// work is one worker's loop: read a batch, process and commit it.
func (s *Service) work(ctx context.Context, c *stream.Consumer) {
	var backoff stream.Backoff
	for ctx.Err() == nil {
		if !s.waitForTrainers(ctx) {
			return
		}
		msgs, err := c.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.m.redisErrors.Inc()
			s.log.Warn("read groups", "consumer", c.Options().Consumer, "err", err)
			backoff.Wait(ctx)
			continue
		}
		backoff.Reset()
		if len(msgs) == 0 {
			continue
		}
		if err := s.process(ctx, c, msgs); err != nil {
			// The entries stay pending and are claimed again after ClaimIdle
			// (and dead-lettered past MaxDeliveries); the done set keeps a
			// commit that did land from being repeated.
			if !errors.Is(err, advantage.ErrRefScorer) {
				s.m.redisErrors.Inc()
			}
			s.log.Warn("process groups", "consumer", c.Options().Consumer, "groups", len(msgs), "err", err)
			backoff.Wait(ctx)
		}
	}
}

// shutdownGrace bounds the work on a batch after shutdown began: its
// reference scoring, and its dead letters and commit.
const shutdownGrace = 30 * time.Second

// process decodes, scores, computes, encodes and commits one batch. The
// batch is finished even when ctx (the worker's) is cancelled while it is
// processed, within shutdownGrace: a graceful shutdown commits what was read.
func (s *Service) process(ctx context.Context, c *stream.Consumer, msgs []stream.Message) error {
	start := time.Now()
	cfg := s.opts.Config
	cfg.CurrentPolicyVersion = s.policyVersion.Load()
	if !s.policyKnown.Load() {
		cfg.MaxStaleness = -1
	}
	type computed struct {
		out stream.Output
		st  advantage.Stats
		err error
	}
	groups := make([]wireGroup, len(msgs))
	results := make([]computed, len(groups))
	scratches := make([]*advantage.Scratch, len(groups))
	defer func() {
		for _, sc := range scratches {
			if sc != nil {
				s.scratch.Put(sc)
			}
		}
	}()
	compute := func(i int) {
		if groups[i].err == nil {
			sc, _ := s.scratch.Get().(*advantage.Scratch)
			if sc == nil {
				sc = new(advantage.Scratch)
			}
			scratches[i] = sc
			r := &results[i]
			r.out, r.st, r.err = s.computeGroup(&groups[i], cfg, sc)
		}
	}
	if s.opts.RefScorer != nil {
		each(len(msgs), func(i int) { groups[i] = s.decode(msgs[i]) })
		// Scoring may take long on a large model: it gets no deadline until
		// shutdown begins, then shutdownGrace.
		sctx, cancel := graceContext(ctx, shutdownGrace)
		err := s.scoreReferences(sctx, groups, cfg)
		cancel()
		if err != nil {
			return err
		}
		each(len(groups), compute)
	} else {
		// Nothing between decoding and computing: each group in one go,
		// while its payload and decoded arrays are still in cache.
		each(len(msgs), func(i int) {
			groups[i] = s.decode(msgs[i])
			compute(i)
		})
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	var dead []stream.DeadLetter
	outputs := make([]stream.Output, 0, len(msgs))
	var st advantage.Stats
	for i := range groups {
		err := cmp.Or(groups[i].err, results[i].err)
		if err != nil {
			dead = append(dead, stream.DeadLetter{Message: groups[i].m, Reason: err.Error()})
			continue
		}
		st.Add(results[i].st)
		outputs = append(outputs, results[i].out)
	}
	if err := c.DeadLetter(ctx, dead...); err != nil {
		return err
	}
	s.m.deadLetters.Add(float64(len(dead)))
	for _, d := range dead {
		s.log.Warn("dead-lettered group entry", "id", d.Message.ID, "reason", d.Reason)
	}
	var records, dups int
	for len(outputs) > 0 {
		// One transaction per chunk of at most maxCommitBytes (and at least
		// one group): EXEC blocks the server while it runs.
		n, size := 0, 0
		for n < len(outputs) && (n == 0 || size+outputBytes(&outputs[n]) <= maxCommitBytes) {
			size += outputBytes(&outputs[n])
			n++
		}
		written, err := c.Commit(ctx, s.keys.GroupsDone, s.keys.Advantages, outputs[:n])
		if err != nil {
			return err
		}
		for i, w := range written {
			if w {
				records += len(outputs[i].Entries)
			} else {
				dups++
			}
		}
		s.committed.Add(int64(n))
		s.m.groups.Add(float64(n))
		outputs = outputs[n:]
	}
	s.m.records.Add(float64(records))
	s.m.duplicates.Add(float64(dups))
	s.m.staleDropped.Add(float64(st.DroppedStale))
	s.m.staleFlagged.Add(float64(st.Stale - st.DroppedStale))
	s.m.zeroVariance.Add(float64(st.ZeroVariance))
	s.m.zeroDropped.Add(float64(st.DroppedZero))
	s.m.batchSeconds.Observe(time.Since(start).Seconds())
	return nil
}

// each calls f(0), ..., f(n-1) on up to GOMAXPROCS goroutines and returns
// when all have returned: a batch's groups are decoded and computed in
// parallel, so that one worker uses every core while another waits on
// Redis. f must be safe to call concurrently for different i.
func each(n int, f func(i int)) {
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := 0; i < n; i++ {
		g.Go(func() error { f(i); return nil })
	}
	_ = g.Wait() // f returns no error
}

// maxCommitBytes bounds the field bytes of one commit transaction.
const maxCommitBytes = 16 << 20

func outputBytes(o *stream.Output) int {
	n := 0
	for _, e := range o.Entries {
		for _, f := range e {
			n += len(f.Name) + len(f.Value)
		}
	}
	return n
}

// wireGroup is one groups-stream entry, decoded (wire.DecodeGroupArrays),
// or the reason it goes to the dead letters.
type wireGroup struct {
	m       stream.Message
	g       *traj.Group
	raws    []wire.Arrays // views into the entry's payload (RefLogprobs nil once scored)
	payload int           // bytes of the entry's payload
	err     error         // set: the entry is dead-lettered with this reason
}

// decode decodes and checks one groups-stream entry.
func (s *Service) decode(m stream.Message) wireGroup {
	decoded := wireGroup{m: m}
	payload, ok := m.Values[stream.FieldGroup].(string)
	if !ok {
		decoded.err = fmt.Errorf("entry %s: no %q field", m.ID, stream.FieldGroup)
		return decoded
	}
	decoded.payload = len(payload)
	data := unsafe.Slice(unsafe.StringData(payload), len(payload))
	var g *traj.Group
	var raws []wire.Arrays
	err := stream.CheckGroupFormat(m, data)
	if err == nil {
		// Either format: a binary payload's arrays are views of it (the
		// entry's string, which nothing writes).
		g, raws, err = wire.DecodeGroupPayload(data)
	}
	switch {
	case err != nil:
		decoded.err = fmt.Errorf("entry %s: %w", m.ID, err)
	case fieldString(m, stream.FieldGroupID) != g.GroupID:
		id := fieldString(m, stream.FieldGroupID)
		decoded.err = fmt.Errorf("entry %s: field %s is %q but the group's id is %q", m.ID, stream.FieldGroupID, id, g.GroupID)
	case g.JobID != s.opts.Job:
		decoded.err = fmt.Errorf("entry %s: group %s belongs to job %q, not %q", m.ID, g.GroupID, g.JobID, s.opts.Job)
	default:
		if err := validateRewardSums(g); err != nil {
			decoded.err = fmt.Errorf("entry %s: group %s: %w", m.ID, g.GroupID, err)
			return decoded
		}
		decoded.g, decoded.raws = g, raws
	}
	return decoded
}

// validateRewardSums checks every trajectory's rewards for agreement
// (traj.Trajectory.ValidateRewardSums): a total that is not the sum of its
// parts or steps would otherwise give advantages silently computed from it.
// It reads decoded values only, a few additions a trajectory.
func validateRewardSums(g *traj.Group) error {
	for i := range g.Trajectories {
		if err := g.Trajectories[i].ValidateRewardSums(); err != nil {
			return fmt.Errorf("trajectories[%d]: %w", i, err)
		}
	}
	return nil
}

func fieldString(m stream.Message, name string) string {
	v, _ := m.Values[name].(string)
	return v
}

// scoreReferences fills ref_log_prob (and their raw JSON) of every
// trajectory of groups that has none (advantage.ScoreReferences: each at its
// own sampling temperature, in RefScorer calls of at most RefBatch
// sequences). Groups that advantage.Compute will drop as stale are not
// scored. A group with a trajectory that cannot be scored gets err set and
// goes to the dead letters. It returns an error (wrapping
// advantage.ErrRefScorer) when the scorer fails as a whole or ctx ends: the
// whole batch is then retried.
func (s *Service) scoreReferences(ctx context.Context, groups []wireGroup, cfg advantage.Config) error {
	type target struct{ g, t int }
	var targets []target
	var ts []*traj.Trajectory
	for gi := range groups {
		g := &groups[gi]
		if g.err != nil || dropsStale(cfg, g.g) {
			continue
		}
		for ti := range g.g.Trajectories {
			if t := &g.g.Trajectories[ti]; len(t.RefLogprobs) == 0 {
				targets, ts = append(targets, target{gi, ti}), append(ts, t)
			}
		}
	}
	failed, err := advantage.ScoreReferences(ctx, s.opts.RefScorer, ts, s.opts.RefBatch, s.opts.RefTemperature)
	if err != nil {
		return err
	}
	scored := 0
	for i, r := range targets {
		g := &groups[r.g]
		if failed[i] != nil {
			g.err = cmp.Or(g.err, fmt.Errorf("entry %s: reference scoring of trajectory %s: %w", g.m.ID, ts[i].ID, failed[i]))
			continue
		}
		g.raws[r.t].RefLogprobs = nil // AppendRecord formats the scores
		scored++
	}
	s.m.refScored.Add(float64(scored))
	return nil
}

// dropsStale reports whether advantage.Compute drops g as stale under cfg.
func dropsStale(cfg advantage.Config, g *traj.Group) bool {
	return cfg.MaxStaleness >= 0 && cfg.CurrentPolicyVersion-g.PolicyVersion > cfg.MaxStaleness && !cfg.FlagStale
}

// graceContext returns a context that is not cancelled with ctx but grace
// after it; cancel releases it.
func graceContext(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-gctx.Done():
		}
	})
	return gctx, func() {
		stop()
		cancel()
	}
}

// compute turns one groups-stream entry into its output (no reference
// scoring).
func (s *Service) compute(m stream.Message, cfg advantage.Config) (stream.Output, advantage.Stats, error) {
	decoded := s.decode(m)
	if decoded.err != nil {
		return stream.Output{}, advantage.Stats{}, decoded.err
	}
	return s.computeGroup(&decoded, cfg, new(advantage.Scratch))
}

// computeGroup turns one decoded entry into its output, computing in sc:
// the output may view sc's memory (binary records' advantages and KL), so
// sc must not be reused before the output is committed.
func (s *Service) computeGroup(decoded *wireGroup, cfg advantage.Config, sc *advantage.Scratch) (stream.Output, advantage.Stats, error) {
	g, raws, m := decoded.g, decoded.raws, decoded.m
	recs, st, err := sc.Compute(g, cfg)
	if err != nil {
		return stream.Output{}, advantage.Stats{}, fmt.Errorf("entry %s: %w", m.ID, err)
	}
	out := stream.Output{ID: m.ID, Done: g.GroupID, Entries: make([][]stream.Field, len(recs))}
	if s.opts.RecordFormat == RecordFormatBinary {
		// The group's records share one fields slice and one header buffer.
		fields := make([]stream.Field, 0, stream.BinaryRecordFieldCount*len(recs))
		buf := make([]byte, 0, binaryHeaderBytes*len(recs))
		for i := range recs {
			n := len(fields)
			if fields, buf, err = stream.AppendBinaryRecordFields(fields, buf, &recs[i]); err != nil {
				return stream.Output{}, advantage.Stats{}, fmt.Errorf("entry %s: %w", m.ID, err)
			}
			out.Entries[i] = fields[n:len(fields):len(fields)]
		}
		return out, st, nil
	}
	for i := range recs {
		data, err := wire.AppendRecord(make([]byte, 0, decoded.payload/len(recs)*2), &recs[i], &raws[i])
		if err != nil {
			return stream.Output{}, advantage.Stats{}, fmt.Errorf("entry %s: %w", m.ID, err)
		}
		out.Entries[i] = stream.RecordFields(&recs[i], data)
	}
	return out, st, nil
}

// binaryHeaderBytes is room for one binary record's header and policy
// version (~560 bytes for a record of four segments and two reward parts; a
// larger one grows the group's buffer, leaving earlier headers in place).
const binaryHeaderBytes = 640

// waitForTrainers returns once the advantages stream has room for another
// batch's records (MaxOutputBacklog), checking every tenth of the metrics
// interval; it reports false when ctx ended first. Nothing is held while it
// waits: the groups stay in their stream.
func (s *Service) waitForTrainers(ctx context.Context) bool {
	limit := s.opts.MaxOutputBacklog
	if limit < 0 {
		return true
	}
	var waiting time.Time // when this wait began; zero while not waiting
	defer func() {
		if !waiting.IsZero() {
			s.m.backpressureSeconds.Add(time.Since(waiting).Seconds())
		}
	}()
	for {
		backlog, tracked, err := stream.GroupsBacklog(ctx, s.client, s.keys.Advantages, nil, limit+1)
		if err != nil {
			// Reading will meet the same outage and back off.
			return ctx.Err() == nil
		}
		s.m.outputBacklog.Set(float64(backlog))
		if !tracked || backlog < limit {
			if !waiting.IsZero() {
				s.log.Info("trainers caught up", "advantages_backlog", backlog, "waited", time.Since(waiting).Round(time.Millisecond))
			}
			return true
		}
		if waiting.IsZero() {
			waiting = time.Now()
			s.log.Warn("waiting for trainers: the advantages stream is at its backlog limit", "backlog", backlog, "limit", limit)
		}
		t := time.NewTimer(s.opts.MetricsInterval / 10)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// trim deletes what every consumer group has acknowledged from both streams.
func (s *Service) trim(ctx context.Context) {
	for _, key := range []string{s.keys.Groups, s.keys.Advantages} {
		n, err := stream.TrimConsumed(ctx, s.client, key)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("trim consumed entries", "stream", key, "err", err)
			}
			continue
		}
		s.m.trimmed.Add(float64(n))
	}
}

// monitor refreshes health, the policy version and the gauges every interval.
func (s *Service) monitor(ctx context.Context, c *stream.Consumer) {
	t := time.NewTicker(s.opts.MetricsInterval)
	defer t.Stop()
	for tick := 1; ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.refresh(ctx)
			if s.opts.TrimConsumed {
				s.trim(ctx)
			}
			if tick%300 == 0 {
				s.prune(ctx, c)
			}
		}
	}
}

// prune deletes consumers of the group that hold nothing and have been idle
// for ten claim timeouts: those of replicas that restarted under new names.
func (s *Service) prune(ctx context.Context, c *stream.Consumer) {
	n, err := c.PruneIdleConsumers(ctx, 10*c.Options().ClaimIdle)
	if err != nil {
		s.log.Warn("prune idle consumers", "err", err)
	} else if n > 0 {
		s.log.Info("pruned idle consumers", "count", n)
	}
}

// refresh checks Redis (the health /healthz reports), reads the policy
// version and the streams' depths.
func (s *Service) refresh(ctx context.Context) {
	err := s.client.Ping(ctx).Err()
	if err == nil {
		var v int64
		v, err = s.client.Get(ctx, s.keys.PolicyVersion).Int64()
		switch {
		case errors.Is(err, goredis.Nil):
			s.policyKnown.Store(false)
			err = nil
		case err == nil:
			s.policyVersion.Store(v)
			s.policyKnown.Store(true)
			s.m.policyVersion.Set(float64(v))
		default:
			err = fmt.Errorf("read %s: %w", s.keys.PolicyVersion, err)
		}
	}
	if err == nil {
		err = s.readDepths(ctx)
	}
	if ctx.Err() != nil {
		return
	}
	s.setHealth(err)
}

// readDepths reads the length and consumer groups of the job's streams
// into the stream_* gauges: its prompts (the distributed actors' work
// queue), groups, advantages and dead letters; on an error the gauges keep
// the last depths read.
func (s *Service) readDepths(ctx context.Context) error {
	var depths []streamDepth
	for _, st := range []struct{ role, key string }{
		{"prompts", s.keys.Prompts}, {"groups", s.keys.Groups}, {"advantages", s.keys.Advantages}, {"dead", s.keys.Dead},
	} {
		n, groups, err := stream.Depth(ctx, s.client, st.key)
		if err != nil {
			return err
		}
		depths = append(depths, streamDepth{stream: st.role, length: n, groups: groups})
	}
	s.m.depth.set(depths)
	return nil
}
