package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"

	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/sink"
	"github.com/toolrl/toolrl/traj"
)

// evaluate samples the held-out prompts with the latest version at the
// evaluation's fixed seed, writes one line to eval.jsonl and returns it.
func (r *run) evaluate(ctx context.Context, k int) (EvalMetrics, error) {
	job := r.cfg.Rollout
	job.ID.Set(job.ID.Get()+"-eval", setting.Code)
	job.Model.Set(r.modelDir, setting.Code)
	job.PolicyVersion.Set(r.learner.Version(), setting.Code)
	job.GroupSize.Set(r.cfg.Eval.GroupSize.Get(), setting.Code)
	job.Seed.Set(r.cfg.Eval.Seed.Get(), setting.Code)
	ev, _, err := Evaluate(ctx, job, r.eval, r.cfg.Eval.SplitBy.Get(), r.log)
	if err != nil {
		return ev, err
	}
	ev.Iteration = k
	if err := writeLine(r.evals, ev); err != nil {
		return ev, fmt.Errorf("write %s: %w", EvalFile, err)
	}
	if r.opts.OnEval != nil {
		r.opts.OnEval(ev)
	}
	return ev, nil
}

// Evaluate samples job.GroupSize completions of every prompt with job's
// model through the orchestrator (the rollout's own loop, tools, scoring and
// accounting; nothing is written: job.Out is not opened) and returns the
// figures, overall and split by the values of each prompt meta field in
// splitBy, with each set's counts per prompt (RolloutStats.PerPrompt, in
// the order of prompts), and the groups sampled, as the sink received them.
func Evaluate(ctx context.Context, job orchestrator.Job, prompts []prompt.Prompt, splitBy []string, logger *slog.Logger) (EvalMetrics, []traj.Group, error) {
	if err := job.Normalize(); err != nil {
		return EvalMetrics{}, nil, err
	}
	job.Batch.Set(max(job.Batch.Get(), job.GroupSize.Get()), job.Batch.Source())
	mem := &sink.MemorySink{}
	sum, err := orchestrator.Run(ctx, job, orchestrator.RunOptions{
		Logger: logger, ProgressOut: io.Discard, Feed: &prompt.List{Prompts: prompts}, Sink: mem,
	})
	if err != nil {
		return EvalMetrics{}, nil, fmt.Errorf("evaluate %s (version %d): %w", job.Model.Get(), job.PolicyVersion.Get(), err)
	}
	groups := inPromptOrder(mem.Groups, prompts)
	ev := EvalMetrics{PolicyVersion: job.PolicyVersion.Get(), Prompts: len(prompts), Overall: statsOf(sum)}
	ev.Overall.PerPrompt = promptCounts(groups, &job)
	if len(splitBy) > 0 {
		ev.Split = map[string]map[string]RolloutStats{}
		for _, field := range splitBy {
			split, err := splitGroups(field, groups, &job)
			if err != nil {
				return ev, mem.Groups, err
			}
			ev.Split[field] = split
		}
	}
	return ev, mem.Groups, nil
}

// inPromptOrder sorts groups (a sink receives them as they finish) by
// their prompt's place in prompts, so that the counts per prompt of two
// evaluations of the same prompts line up; a group of a prompt not in
// prompts (none is expected) goes last, in the order received.
func inPromptOrder(groups []traj.Group, prompts []prompt.Prompt) []traj.Group {
	place := make(map[string]int, len(prompts))
	for i, p := range prompts {
		if _, seen := place[p.ID]; !seen {
			place[p.ID] = i
		}
	}
	rank := func(g traj.Group) int {
		if i, ok := place[g.PromptID]; ok {
			return i
		}
		return len(prompts)
	}
	out := slices.Clone(groups)
	slices.SortStableFunc(out, func(a, b traj.Group) int { return rank(a) - rank(b) })
	return out
}

// splitGroups splits the groups by the value of the prompts' meta field
// (trajectories of a group share their prompt's meta) and returns each
// value's figures. A prompt without the field counts under "(none)".
func splitGroups(field string, groups []traj.Group, job *orchestrator.Job) (map[string]RolloutStats, error) {
	byValue := map[string][]traj.Group{}
	for _, g := range groups {
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
		byValue[value] = append(byValue[value], g)
	}
	out := map[string]RolloutStats{}
	for _, v := range slices.Sorted(maps.Keys(byValue)) {
		out[v] = groupStats(byValue[v], job)
	}
	return out, nil
}
