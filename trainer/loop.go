package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/sink"
	"github.com/toolrl/toolrl/traj"
)

// Options are the parts of a run that are not the config.
type Options struct {
	// Resume continues from the store's latest version and its iteration;
	// without it an output folder that already holds versions is an error.
	Resume bool
	Logger *slog.Logger
	// OnIteration and OnEval observe progress (a progress bar).
	OnIteration func(IterationMetrics)
	OnEval      func(EvalMetrics)
	// Redis, when set, makes Train the driver of a distributed run on that
	// server: rollout workers and advantage services elsewhere do the
	// sampling and scoring (see distributed.go).
	Redis goredis.UniversalClient
}

// Result is what a run did.
type Result struct {
	// FirstIteration is the first iteration this run trained (1, or the one
	// after a resumed version's); LastIteration the last it finished.
	FirstIteration, LastIteration int
	Version                       int64 // the latest published version
	VersionDir                    string
	Interrupted                   bool
	Elapsed                       time.Duration
	Out                           string
	Last                          IterationMetrics
	LastEval                      *EvalMetrics
}

// Paths of a run's output folder.
const (
	MetricsFile      = "metrics.jsonl"
	EvalFile         = "eval.jsonl"
	TrajectoriesFile = "trajectories.jsonl"
	PolicyDir        = "policy"
	// BaseQuantizedDir holds version 0's quantized copy for actors (the
	// base model quantized as rollout_quantization asks), written when a
	// fresh run starts.
	BaseQuantizedDir = "base/" + policystore.QuantizedForm
)

// run is one training run's state.
type run struct {
	cfg      Config
	opts     Options
	log      *slog.Logger
	acfg     advantage.Config
	learner  *learner.Learner
	base     learner.Base
	store    *policystore.Store
	prompts  []prompt.Prompt
	eval     []prompt.Prompt
	metrics  *os.File
	evals    *os.File
	trajOut  sink.Sink
	modelDir string // the latest version's folder (version 0: the config's model)
	// actorDir is the folder rollouts load the latest version from:
	// modelDir, or its quantized form with rollout_quantization.
	actorDir string
	// learnerOpts are the learner's options; resumed the state of the
	// version a resumed run starts from (nil on a fresh run).
	learnerOpts learner.Options
	resumed     *learner.State
}

// Train runs cfg's closed loop. Cancelling ctx finishes the iteration in
// progress (its update is published) and returns with Interrupted set.
func Train(ctx context.Context, cfg Config, opts Options) (res Result, err error) {
	start := time.Now()
	if err := cfg.Normalize(); err != nil {
		return Result{}, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &run{cfg: cfg, opts: opts, log: opts.Logger, modelDir: cfg.Rollout.Model.Get(), actorDir: cfg.Rollout.Model.Get()}
	defer r.close()
	first, err := r.open(ctx)
	if err != nil {
		return Result{}, err
	}
	res = Result{FirstIteration: first, LastIteration: first - 1, Version: r.learner.Version(), VersionDir: r.modelDir, Out: cfg.Out.Get()}
	defer func() { res.Elapsed = time.Since(start) }()
	// work outlives ctx: an iteration that began is finished and published.
	work := context.WithoutCancel(ctx)
	if first == 1 && cfg.Eval.Prompts.Get() != "" {
		ev, err := r.evaluate(work, 0)
		if err != nil {
			return res, err
		}
		res.LastEval = &ev
	}
	if opts.Redis != nil {
		err := r.distributed(ctx, work, opts.Redis, first, &res)
		if ctx.Err() != nil && res.LastIteration < cfg.Iterations.Get() {
			res.Interrupted = true
		}
		return res, err
	}
	// next is the rollout of the coming iteration: started ahead, during
	// the previous update, in async mode.
	type rollout struct {
		groups  []traj.Group
		summary *orchestrator.Summary
		version int64
		err     error
	}
	startRollout := func(k int) chan rollout {
		ch := make(chan rollout, 1)
		dir, version := r.actorDir, r.learner.Version()
		go func() {
			groups, sum, err := r.rollout(work, k, dir, version)
			ch <- rollout{groups, sum, version, err}
		}()
		return ch
	}
	var ahead chan rollout
	for k := first; k <= cfg.Iterations.Get(); k++ {
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		itStart := time.Now()
		if ahead == nil {
			ahead = startRollout(k)
		}
		ro := <-ahead
		ahead = nil
		if ro.err != nil {
			return res, fmt.Errorf("iteration %d: rollout: %w", k, ro.err)
		}
		if cfg.Async.Get() && k < cfg.Iterations.Get() && ctx.Err() == nil {
			ahead = startRollout(k + 1) // on the version this update starts from
		}
		m, err := r.iterate(work, k, ro.groups, ro.summary, ro.version)
		if err != nil {
			if ahead != nil {
				<-ahead
			}
			return res, fmt.Errorf("iteration %d: %w", k, err)
		}
		if cfg.Eval.Prompts.Get() != "" && (k%cfg.Eval.Every.Get() == 0 || k == cfg.Iterations.Get()) {
			t := time.Now()
			ev, err := r.evaluate(work, k)
			if err != nil {
				if ahead != nil {
					<-ahead
				}
				return res, err
			}
			res.LastEval = &ev
			m.Seconds.Eval = time.Since(t).Seconds()
		}
		m.Seconds.Total = time.Since(itStart).Seconds()
		if err := writeLine(r.metrics, m); err != nil {
			return res, fmt.Errorf("write %s: %w", MetricsFile, err)
		}
		if r.opts.OnIteration != nil {
			r.opts.OnIteration(m)
		}
		res.LastIteration, res.Version, res.VersionDir, res.Last = k, r.learner.Version(), r.modelDir, m
	}
	if ahead != nil {
		<-ahead // an interrupted run's rollout ahead: finished, not trained on
	}
	if ctx.Err() != nil && res.LastIteration < cfg.Iterations.Get() {
		res.Interrupted = true
	}
	return res, nil
}

// open prepares the output folder, the learner and the prompt sets, and
// returns the first iteration to run.
func (r *run) open(ctx context.Context) (int, error) {
	cfg := r.cfg
	if err := os.MkdirAll(cfg.Out.Get(), 0o755); err != nil {
		return 0, fmt.Errorf("out: %w", err)
	}
	var err error
	if r.acfg, err = cfg.AdvantageConfig(); err != nil {
		return 0, err
	}
	lopts, err := cfg.LearnerOptions()
	if err != nil {
		return 0, err
	}
	r.learnerOpts = lopts
	model, mcfg, err := learner.LoadModel(cfg.Rollout.Model.Get())
	if err != nil {
		return 0, fmt.Errorf("rollout.model: %w", err)
	}
	if r.base, err = learner.ReadBase(cfg.Rollout.Model.Get(), mcfg); err != nil {
		return 0, err
	}
	if r.base.RolloutQuantization, err = cfg.Quantization(); err != nil {
		return 0, err
	}
	var ref *train.Model
	if lopts.Loss.KLBeta > 0 {
		refDir := cfg.Learner.RefModel.Get()
		if refDir == "" {
			refDir = cfg.Rollout.Model.Get()
		}
		if ref, _, err = learner.LoadModel(refDir); err != nil {
			return 0, fmt.Errorf("learner.ref_model: %w", err)
		}
	}
	if r.learner, err = learner.New(model, ref, cfg.Rollout.PolicyVersion.Get(), lopts); err != nil {
		return 0, err
	}
	if r.store, err = policystore.Open(filepath.Join(cfg.Out.Get(), PolicyDir)); err != nil {
		return 0, err
	}
	first := 1
	v, err := r.store.Latest()
	switch {
	case errors.Is(err, policystore.ErrNoVersion):
		if r.opts.Resume {
			r.log.Info("train: nothing to resume; starting at iteration 1", "store", r.store.Dir())
		}
	case err != nil:
		return 0, err
	case !r.opts.Resume:
		return 0, fmt.Errorf("out %s already holds policy version %d: pass --resume to continue it, or choose another out", cfg.Out.Get(), v.Number)
	default:
		if err := policystore.Verify(ctx, v); err != nil {
			return 0, fmt.Errorf("resume: %w", err)
		}
		st, err := r.learner.Resume(v)
		if err != nil {
			return 0, fmt.Errorf("resume: %w", err)
		}
		first = st.Iteration + 1
		if err := r.setVersionDir(v.Dir); err != nil {
			return 0, fmt.Errorf("resume: %w", err)
		}
		r.resumed = &st
		r.log.Info("train: resumed", "version", v.Number, "iteration", st.Iteration, "dir", v.Dir)
	}
	if first == 1 && r.base.RolloutQuantization.Enabled() {
		// Version 0's copy for actors, from the base weights the learner
		// just loaded; rewritten by every fresh run (it is deterministic).
		dir := filepath.Join(cfg.Out.Get(), BaseQuantizedDir)
		if err := os.RemoveAll(dir); err != nil {
			return 0, fmt.Errorf("rollout_quantization: %w", err)
		}
		if err := r.learner.WriteQuantized(dir, r.base); err != nil {
			return 0, fmt.Errorf("rollout_quantization: version 0: %w", err)
		}
		r.actorDir = dir
	}
	set, err := prompt.ReadFile(cfg.Rollout.Prompts.Get(), cfg.Rollout.Limit.Get(), cfg.Rollout.SkipInvalid.Get())
	if err != nil {
		return 0, fmt.Errorf("rollout.prompts: %w", err)
	}
	if len(set.Prompts) < cfg.PromptsPerIteration.Get() {
		return 0, fmt.Errorf("rollout.prompts %s: %d prompts, fewer than prompts_per_iteration %d", cfg.Rollout.Prompts.Get(), len(set.Prompts), cfg.PromptsPerIteration.Get())
	}
	r.prompts = set.Prompts
	if cfg.Eval.Prompts.Get() != "" {
		eset, err := prompt.ReadFile(cfg.Eval.Prompts.Get(), cfg.Eval.Limit.Get(), false)
		if err != nil {
			return 0, fmt.Errorf("eval.prompts: %w", err)
		}
		r.eval = eset.Prompts
		if err := disjoint(r.prompts, r.eval); err != nil {
			return 0, err
		}
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if first == 1 {
		flags = os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	}
	if r.metrics, err = os.OpenFile(filepath.Join(cfg.Out.Get(), MetricsFile), flags, 0o644); err != nil {
		return 0, err
	}
	if r.evals, err = os.OpenFile(filepath.Join(cfg.Out.Get(), EvalFile), flags, 0o644); err != nil {
		return 0, err
	}
	if r.trajOut, err = sink.OpenSink(ctx, filepath.Join(cfg.Out.Get(), TrajectoriesFile), cfg.Rollout.ID.Get(), first == 1); err != nil {
		return 0, err
	}
	return first, nil
}

// disjoint refuses an evaluation set that shares a prompt with the RL set
// (by id or by text): held-out figures would not be held out.
func disjoint(train, eval []prompt.Prompt) error {
	ids := map[string]bool{}
	texts := map[string]string{}
	for _, p := range train {
		ids[p.ID] = true
		if p.Prompt != "" {
			texts[p.Prompt] = p.ID
		}
	}
	for _, p := range eval {
		if ids[p.ID] {
			return fmt.Errorf("eval.prompts: prompt %s is also in rollout.prompts; the evaluation set must be held out", p.ID)
		}
		if id, ok := texts[p.Prompt]; ok && p.Prompt != "" {
			return fmt.Errorf("eval.prompts: prompt %s has the text of rollout prompt %s; the evaluation set must be held out", p.ID, id)
		}
	}
	return nil
}

func (r *run) close() {
	if r.trajOut != nil {
		_ = r.trajOut.Close()
	}
	for _, f := range []*os.File{r.metrics, r.evals} {
		if f != nil {
			_ = f.Close()
		}
	}
	if r.store != nil {
		_ = r.store.Close()
	}
}

// promptsFor returns iteration k's prompts: the next P distinct prompts of
// an endless stream that walks the prompt set in a seeded order, reshuffled
// at every pass, each prompt tagged with iteration k. A prompt that comes up
// twice in one iteration (at the seam of two passes) is skipped for the
// next one, so a group is never sampled twice in an iteration. The stream is
// replayed from the start, so iteration k's prompts depend only on the seed.
func (r *run) promptsFor(k int) []prompt.Prompt {
	n, per := len(r.prompts), r.cfg.PromptsPerIteration.Get()
	var perm []int
	pass, pos := -1, 0
	next := func() int {
		if pos/n != pass {
			pass = pos / n
			perm = rand.New(rand.NewPCG(r.cfg.Rollout.Seed.Get(), uint64(pass)+0x9e3779b97f4a7c15)).Perm(n)
		}
		i := perm[pos%n]
		pos++
		return i
	}
	var out []prompt.Prompt
	for it := 1; it <= k; it++ {
		seen := make(map[int]bool, per)
		out = out[:0]
		for len(seen) < per {
			i := next()
			if seen[i] {
				continue
			}
			seen[i] = true
			if it == k {
				p := r.prompts[i]
				p.Iteration = k
				out = append(out, p)
			}
		}
	}
	return out
}

// rollout samples iteration k's groups with the version in dir.
func (r *run) rollout(ctx context.Context, k int, dir string, version int64) ([]traj.Group, *orchestrator.Summary, error) {
	job := r.cfg.Rollout
	job.Model.Set(dir, setting.Code)
	job.PolicyVersion.Set(version, setting.Code)
	mem := &sink.MemorySink{}
	sum, err := orchestrator.Run(ctx, job, orchestrator.RunOptions{
		Logger: r.log, ProgressOut: io.Discard, Feed: &prompt.List{Prompts: r.promptsFor(k)}, Sink: mem,
	})
	if err != nil {
		return nil, sum, err
	}
	return mem.Groups, sum, nil
}

// iterate computes the advantages of one iteration's groups, takes the
// learner update, publishes the next version and keeps the trained groups.
func (r *run) iterate(ctx context.Context, k int, groups []traj.Group, sum *orchestrator.Summary, version int64) (IterationMetrics, error) {
	m := IterationMetrics{Iteration: k, RolloutVersion: version, Rollout: statsOf(sum)}
	m.Seconds.Rollout = sum.Wall.Seconds()
	t := time.Now()
	var records []traj.AdvantageRecord
	var stats advantage.Stats
	for i := range groups {
		recs, st, err := advantage.Compute(&groups[i], r.acfg)
		if err != nil {
			return m, fmt.Errorf("advantages of group %s: %w", groups[i].GroupID, err)
		}
		stats.Add(st)
		records = append(records, recs...)
	}
	m.Advantage = advantageStats(records, groups, correctnessOf(groups, &r.cfg.Rollout))
	m.Advantage.ZeroVariance = int(stats.ZeroVariance)
	m.Advantage.Dropped = int(stats.DroppedZero + stats.DroppedStale)
	m.Advantage.Seconds = time.Since(t).Seconds()
	m.Seconds.Advantage = m.Advantage.Seconds
	t = time.Now()
	r.learner.SetIteration(k) // before Update: a diverged update names its iteration
	met, err := r.learner.Update(ctx, records)
	if err != nil {
		return m, fmt.Errorf("learner update: %w", err)
	}
	m.Learner = met
	m.Seconds.Learn = time.Since(t).Seconds()
	// The groups go to trajectories.jsonl before the version is published:
	// a crash in between reruns the iteration, whose groups the sink then
	// recognises (same ids, same content on-policy) and does not repeat.
	for i := range groups {
		if _, err := r.trajOut.WriteGroup(ctx, &groups[i]); err != nil {
			return m, fmt.Errorf("write %s: %w", TrajectoriesFile, err)
		}
	}
	m.PublishedVersion = r.learner.Version()
	if met.Steps == 0 {
		// Nothing trained (every group dropped): the next iteration samples
		// with the same version.
		r.log.Warn("train: nothing trained in this iteration; no version published", "iteration", k, "records", len(records))
		return m, nil
	}
	t = time.Now()
	v, err := r.learner.Publish(ctx, r.store, r.base, nil, len(records))
	if err != nil {
		return m, err
	}
	if err := r.setVersionDir(v.Dir); err != nil {
		return m, err
	}
	m.PublishedVersion = v.Number
	m.Seconds.Publish = time.Since(t).Seconds()
	return m, nil
}

// setVersionDir makes the version in dir the one rollouts and evaluation
// sample: evaluation its float32 folder, rollouts that too or, with
// rollout_quantization, its quantized form, which must be there.
func (r *run) setVersionDir(dir string) error {
	r.modelDir, r.actorDir = dir, dir
	if !r.base.RolloutQuantization.Enabled() {
		return nil
	}
	q := filepath.Join(dir, policystore.QuantizedForm)
	if _, err := os.Stat(filepath.Join(q, "config.json")); err != nil {
		return fmt.Errorf("rollout_quantization: %s has no quantized form (%s/): it was published without rollout_quantization", dir, policystore.QuantizedForm)
	}
	r.actorDir = q
	return nil
}

func writeLine(f *os.File, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	return err
}
