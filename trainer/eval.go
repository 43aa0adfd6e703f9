package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/traj"
)

// evaluate samples the held-out prompts with the latest version through the
// orchestrator (the rollout's own loop, scoring and accounting) at the
// evaluation's fixed seed, writes one line to eval.jsonl and returns it.
func (r *run) evaluate(ctx context.Context, k int) (EvalMetrics, error) {
	job := r.cfg.Rollout
	job.ID = job.ID + "-eval"
	job.Model, job.PolicyVersion = r.modelDir, r.learner.Version()
	job.GroupSize = r.cfg.Eval.GroupSize
	if r.cfg.Eval.Seed != nil {
		job.Seed = *r.cfg.Eval.Seed
	}
	job.Batch = max(job.Batch, job.GroupSize)
	sink := &memorySink{}
	sum, err := orchestrator.Run(ctx, job, orchestrator.RunOptions{
		Logger: r.log, ProgressOut: io.Discard, Feed: &promptList{prompts: r.eval}, Sink: sink,
	})
	if err != nil {
		return EvalMetrics{}, fmt.Errorf("evaluate version %d: %w", job.PolicyVersion, err)
	}
	ev := EvalMetrics{Iteration: k, PolicyVersion: job.PolicyVersion, Prompts: len(r.eval), Overall: statsOf(sum)}
	if len(r.cfg.Eval.SplitBy) > 0 {
		ev.Split = map[string]map[string]RolloutStats{}
		for _, field := range r.cfg.Eval.SplitBy {
			split, err := r.splitBy(field, sink.groups, &job)
			if err != nil {
				return ev, err
			}
			ev.Split[field] = split
		}
	}
	if err := writeLine(r.evals, ev); err != nil {
		return ev, fmt.Errorf("write %s: %w", EvalFile, err)
	}
	if r.opts.OnEval != nil {
		r.opts.OnEval(ev)
	}
	return ev, nil
}

// splitBy folds the groups into one summary per value of the prompts' meta
// field (trajectories of a group share their prompt's meta), with the
// orchestrator's own accounting and the job's own answer check. A prompt
// without the field counts under "(none)".
func (r *run) splitBy(field string, groups []traj.Group, job *orchestrator.Job) (map[string]RolloutStats, error) {
	sums := map[string]*orchestrator.Summary{}
	for i := range groups {
		g := &groups[i]
		value := "(none)"
		if meta := g.Trajectories[0].Meta; len(meta) > 0 {
			var fields map[string]any
			if err := json.Unmarshal(meta, &fields); err != nil {
				return nil, fmt.Errorf("eval: prompt %s: meta is not a JSON object: %w", g.PromptID, err)
			}
			if v, ok := fields[field]; ok {
				value = fmt.Sprint(v)
			}
		}
		s := sums[value]
		if s == nil {
			s = orchestrator.NewSummary(job.ID)
			sums[value] = s
		}
		correct := make([]bool, len(g.Trajectories))
		for j := range g.Trajectories {
			t := g.Trajectories[j] // Score sets the reward; score a copy
			correct[j] = job.Rewards.Score(&t, t.Answer)
		}
		s.AddGroup(g, correct)
	}
	out := map[string]RolloutStats{}
	for _, v := range slices.Sorted(maps.Keys(sums)) {
		out[v] = statsOf(sums[v])
	}
	return out, nil
}
