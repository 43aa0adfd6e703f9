package trainer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
)

// StatsGroup is the driver's consumer group on the job's groups stream: it
// reads the iteration's groups for their figures (accuracy, calls).
const StatsGroup = "train-stats"

// DriverConsumer is the driver's consumer name in the learner group of the
// advantages stream (a restarted driver finds its pending records by it).
const DriverConsumer = "train-driver"

// distributed runs the loop's driver on Redis: each iteration's prompts go
// to the job's prompts stream (with the least policy version they may be
// sampled with), `toolrl rollout --worker --follow --watch redis` processes
// sample them with the latest announced version, `toolrl advantage serve`
// turns groups into records, and the driver trains on the iteration's
// records, publishes and announces the next version.
func (r *run) distributed(ctx, work context.Context, client goredis.UniversalClient, first int, res *Result) error {
	cfg := r.cfg
	keys := stream.JobKeys(cfg.Rollout.ID.Get())
	src, err := learner.NewStreamSource(work, client, learner.StreamOptions{
		Job: cfg.Rollout.ID.Get(), Consumer: DriverConsumer, Size: 1 << 20, MaxWait: 200 * time.Millisecond, Logger: r.log,
	})
	if err != nil {
		return err
	}
	if r.resumed != nil {
		// Records of the resumed version that a crash left unacknowledged.
		if err := src.Ack(work, r.resumed.Consumed); err != nil {
			return err
		}
	}
	announce := func(ctx context.Context, v policystore.Version) error {
		err := stream.AnnouncePolicy(ctx, client, keys, stream.PolicyPointer{Version: v.Number, Dir: v.Dir, PublishedAt: v.Manifest.Created})
		if errors.Is(err, stream.ErrPolicyNotNewer) {
			return nil
		}
		return err
	}
	// Workers sample with the announced version: announce the one a resumed
	// driver starts from.
	if err := r.announceStart(work, client, keys); err != nil {
		return err
	}
	groups, err := stream.NewConsumer(client, stream.ConsumerOptions{
		Stream: keys.Groups, Group: StatsGroup, Consumer: DriverConsumer, Count: 256, Block: 10 * time.Millisecond,
		ClaimIdle: time.Hour, MaxDeliveries: -1,
	})
	if err != nil {
		return err
	}
	if err := groups.EnsureGroup(work); err != nil {
		return err
	}
	maxStale := r.learnerOpts.MaxStaleness
	// enqueue hands iteration k's prompts to the workers, gated at the least
	// version the learner will keep when it trains them at version trainAt.
	enqueue := func(k int, trainAt int64) error {
		ps := r.promptsFor(k)
		minVersion := int64(0)
		if maxStale >= 0 {
			minVersion = max(0, trainAt-maxStale)
		}
		for i := range ps {
			ps[i].MinPolicyVersion = minVersion
		}
		_, err := prompt.Enqueue(work, client, cfg.Rollout.ID.Get(), ps)
		return err
	}
	for k := first; k <= cfg.Iterations.Get(); k++ {
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		itStart := time.Now()
		if err := enqueue(k, r.learner.Version()); err != nil {
			return fmt.Errorf("iteration %d: enqueue: %w", k, err)
		}
		if cfg.Async.Get() && k < cfg.Iterations.Get() {
			// The next iteration's prompts may start on the version this
			// update begins from; they are trained one version later.
			if err := enqueue(k+1, r.learner.Version()+1); err != nil {
				return fmt.Errorf("iteration %d: enqueue: %w", k+1, err)
			}
		}
		it := &iterationSource{src: src, groups: groups, client: client, keys: keys, groupSize: cfg.Rollout.GroupSize.Get(),
			timeout: cfg.IterationTimeout.Get()}
		for _, p := range r.promptsFor(k) {
			it.expect(traj.GroupID(cfg.Rollout.ID.Get(), p.ID, k))
		}
		m := IterationMetrics{Iteration: k, RolloutVersion: r.learner.Version()}
		r.learner.SetIteration(k)
		var trained bool
		var updated time.Time
		sum, err := learner.Run(work, r.learner, it, learner.RunOptions{
			Store: r.store, Base: r.base, PublishEvery: 1, SetAside: true, Announce: announce, Logger: r.log,
			OnUpdate: func(met learner.Metrics) {
				m.Learner, trained, updated = met, trained || met.Steps > 0, time.Now()
			},
			OnPublish: func(v policystore.Version, _ learner.State) {
				// Workers load the version themselves (its quantized form
				// when they started from a quantized model); the driver
				// evaluates its float32 folder.
				r.modelDir = v.Dir
				m.PublishedVersion = v.Number
				m.Seconds.Publish = time.Since(updated).Seconds()
			},
		})
		if err != nil {
			return fmt.Errorf("iteration %d: %w", k, err)
		}
		m.Rollout = groupStats(it.sampled, &r.cfg.Rollout)
		m.Rollout.Seconds = it.waited.Seconds()
		m.Seconds.Rollout = it.waited.Seconds()
		m.Seconds.Learn = sum.Elapsed.Seconds() - it.waited.Seconds() - m.Seconds.Publish
		m.Advantage = advantageStats(it.records, it.sampled, correctnessOf(it.sampled, &r.cfg.Rollout))
		m.Advantage.Groups = len(it.want)
		m.Advantage.Dropped = it.droppedGroups
		if it.missing > 0 {
			r.log.Warn("train: iteration timed out waiting for groups; trained on what arrived",
				"iteration", k, "missing_groups", it.missing, "timeout", cfg.IterationTimeout.Get())
		}
		if !trained {
			m.PublishedVersion = m.RolloutVersion
			r.log.Warn("train: nothing trained in this iteration (every group dropped, stale or missing); no version published",
				"iteration", k, "records", len(it.records), "missing_groups", it.missing)
		}
		if cfg.Eval.Prompts.Get() != "" && (k%cfg.Eval.Every.Get() == 0 || k == cfg.Iterations.Get()) {
			t := time.Now()
			ev, err := r.evaluate(work, k)
			if err != nil {
				return err
			}
			res.LastEval = &ev
			m.Seconds.Eval = time.Since(t).Seconds()
		}
		m.Seconds.Total = time.Since(itStart).Seconds()
		if err := writeLine(r.metrics, m); err != nil {
			return fmt.Errorf("write %s: %w", MetricsFile, err)
		}
		if r.opts.OnIteration != nil {
			r.opts.OnIteration(m)
		}
		res.LastIteration, res.Version, res.VersionDir, res.Last = k, r.learner.Version(), r.modelDir, m
	}
	return nil
}

// announceStart points the job's policy key at the version the driver
// starts from, unless it already names that version or a newer one.
func (r *run) announceStart(ctx context.Context, client goredis.UniversalClient, keys stream.Keys) error {
	p, found, err := stream.ReadPolicy(ctx, client, keys)
	if err != nil {
		return err
	}
	v := r.learner.Version()
	if v == 0 {
		// Version 0 is the config's model folder, which workers start from
		// (their --model); the pointer only ever names published versions.
		if found {
			return fmt.Errorf("redis: job %s already announces policy version %d but the driver starts from version 0 (another run of the same job? use another job name or --resume its store)", keys.Job, p.Version)
		}
		return nil
	}
	if found && p.Version > v {
		return fmt.Errorf("redis: job %s announces policy version %d, newer than the driver's %d (another run of the same job? use another job name or --resume its store)", keys.Job, p.Version, v)
	}
	if found && p.Version == v {
		return nil
	}
	err = stream.AnnouncePolicy(ctx, client, keys, stream.PolicyPointer{Version: v, Dir: r.modelDir, PublishedAt: time.Now().UTC()})
	if errors.Is(err, stream.ErrPolicyNotNewer) {
		return nil
	}
	return err
}

// iterationSource is a learner.Source that yields one batch: every record
// read until each expected group of the iteration has its G records, or is
// done with none (dropped by the advantage service), or the timeout passes.
// Records of other groups read meanwhile (late groups of an earlier
// iteration) join the batch; the learner's staleness bound applies to them.
type iterationSource struct {
	src *learner.StreamSource
	// groups reads the job's groups stream through the driver's own
	// consumer group, for the iteration's figures (the records carry no
	// calls or answers); nil: no figures.
	groups    *stream.Consumer
	client    goredis.UniversalClient
	keys      stream.Keys
	groupSize int
	timeout   time.Duration

	want          map[string]int // expected group id -> records seen
	size          map[string]int // group id -> its size, from its groups-stream entry
	doneSeen      map[string]bool
	sizeWarned    bool
	records       []traj.AdvantageRecord
	sampled       []traj.Group // the iteration's groups as the workers wrote them
	done          bool
	waited        time.Duration
	missing       int
	droppedGroups int
}

func (s *iterationSource) expect(groupID string) {
	if s.want == nil {
		s.want = map[string]int{}
	}
	s.want[groupID] = 0
}

func (s *iterationSource) Next(ctx context.Context) (learner.Batch, error) {
	if s.done {
		return learner.Batch{}, io.EOF
	}
	s.done = true
	start := time.Now()
	defer func() { s.waited = time.Since(start) }()
	var out learner.Batch
	lastCheck := time.Now()
	for {
		open := s.open()
		if len(open) == 0 {
			return out, nil
		}
		if s.timeout > 0 && time.Since(start) > s.timeout {
			s.missing = len(open)
			return out, nil
		}
		step, cancel := context.WithTimeout(ctx, time.Second)
		b, err := s.src.Next(step)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			return out, err
		}
		for i, rec := range b.Records {
			if _, ok := s.want[rec.GroupID]; ok {
				s.want[rec.GroupID]++
				s.records = append(s.records, rec)
			}
			out.Records = append(out.Records, rec)
			out.IDs = append(out.IDs, b.IDs[i])
		}
		if err := s.readGroups(ctx); err != nil {
			return out, err
		}
		// Groups with no record may have been dropped by the service
		// (zero variance, staleness): it marks them done all the same. The
		// service commits a group's records and its done mark together, so
		// a group seen done before this read and still without a record
		// after it was dropped.
		for g := range s.doneSeen {
			if s.want[g] == 0 {
				s.want[g] = s.expected(g)
				s.droppedGroups++
			}
			delete(s.doneSeen, g)
		}
		if time.Since(lastCheck) > 500*time.Millisecond {
			lastCheck = time.Now()
			for _, g := range s.open() {
				if s.want[g] > 0 {
					continue
				}
				done, err := s.client.SIsMember(ctx, s.keys.GroupsDone, g).Result()
				if err != nil {
					return out, fmt.Errorf("redis: check group %s: %w", g, err)
				}
				if done {
					if s.doneSeen == nil {
						s.doneSeen = map[string]bool{}
					}
					s.doneSeen[g] = true
				}
			}
		}
	}
}

// readGroups takes what the groups stream has for the driver: the
// iteration's groups are kept for its figures, every entry is acknowledged.
func (s *iterationSource) readGroups(ctx context.Context) error {
	if s.groups == nil {
		return nil
	}
	for {
		msgs, err := s.groups.Read(ctx)
		if err != nil || len(msgs) == 0 {
			return err
		}
		ids := make([]string, 0, len(msgs))
		for _, m := range msgs {
			ids = append(ids, m.ID)
			g, err := stream.DecodeGroupEntry(m)
			if err != nil {
				continue // the advantage service dead-letters it
			}
			if _, ok := s.want[g.GroupID]; ok {
				s.sampled = append(s.sampled, *g)
				if s.size == nil {
					s.size = map[string]int{}
				}
				s.size[g.GroupID] = len(g.Trajectories)
				if len(g.Trajectories) != s.groupSize && !s.sizeWarned {
					s.sizeWarned = true
					slog.Warn("train: workers sample groups of a different size than the config's rollout.group_size; start them with the same rollout settings",
						"group", g.GroupID, "size", len(g.Trajectories), "group_size", s.groupSize)
				}
			}
		}
		if err := s.groups.Ack(ctx, ids...); err != nil {
			return err
		}
	}
}

// expected is the number of records group g yields: its size as its
// groups-stream entry shows, else the config's group size.
func (s *iterationSource) expected(g string) int {
	if n, ok := s.size[g]; ok {
		return n
	}
	return s.groupSize
}

// open lists the expected groups still short of their records.
func (s *iterationSource) open() []string {
	var out []string
	for g, n := range s.want {
		if n < s.expected(g) {
			out = append(out, g)
		}
	}
	return out
}

func (s *iterationSource) Ack(ctx context.Context, ids []string) error { return s.src.Ack(ctx, ids) }
func (s *iterationSource) Reject(ctx context.Context, id, reason string) error {
	return s.src.Reject(ctx, id, reason)
}
