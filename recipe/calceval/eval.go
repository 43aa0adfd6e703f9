// Package calceval measures a policy on held-out prompts through the
// orchestrator (toolrl model eval): the rollout job an evaluation's
// settings describe, trainer.Evaluate over it (the rollout's loop, tools,
// rewards and accounting), the sampled groups written as a rollout writes
// them, and the figures as a table overall and split by prompt meta fields.
package calceval

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolrl/toolrl/internal/samefile"
	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/sink"
	"github.com/toolrl/toolrl/trainer"
	"github.com/toolrl/toolrl/traj"
)

// JobID is the evaluation's job id: trajectory ids are eval/PROMPT/i.
// Sample seeds do not depend on it (actor.SampleSeed(seed, prompt id, i)).
const JobID = "eval"

// Options are an evaluation's settings. New's errors name each setting by
// its toolrl model eval flag (--samples, --prompts, ...).
type Options struct {
	// Model is the model folder; Prompts the held-out prompts (JSONL: id,
	// prompt, answer, meta), of which the first Limit are used (0: all).
	Model, Prompts string
	Limit          int
	// Samples is the number of samples per prompt (the group size G, ≥ 1).
	Samples int
	// Temperature is the sampling temperature; 0 is greedy decoding.
	Temperature float64
	// Seed is the job seed; per-sample seeds derive from it.
	Seed uint64
	// MaxNewTokens bounds the tokens sampled per model turn (≥ 1).
	MaxNewTokens int
	// Threads is ONNX Runtime's intra-op thread count (0: one per core).
	Threads int
	// SplitBy are the prompt meta fields the figures are split by.
	SplitBy []string
	// SamplesOut, when set, is a .jsonl or .parquet file that receives the
	// sampled groups' trajectories, as toolrl rollout writes them.
	SamplesOut string
}

// Eval is an evaluation ready to run: its rollout job (normalized), its
// prompts and, with Options.SamplesOut, the sink of its samples.
type Eval struct {
	Job     orchestrator.Job
	Prompts []prompt.Prompt
	SplitBy []string

	samplesOut string
	samples    sink.Sink
}

// New builds the rollout job o describes, reads its prompts and opens the
// samples' sink. Every error is a setting that must change: a value out of
// range, a model folder or prompts file that cannot be used, or a
// SamplesOut that is not a file name or is one of the evaluation's inputs.
// Nothing is written: a file sink creates its file only with the first
// group.
func New(ctx context.Context, o Options) (*Eval, error) {
	switch {
	case o.Samples <= 0:
		return nil, fmt.Errorf("--samples %d: want ≥ 1", o.Samples)
	case !(o.Temperature >= 0):
		return nil, fmt.Errorf("--temperature %g: want ≥ 0", o.Temperature)
	case o.Limit < 0:
		return nil, fmt.Errorf("--limit %d: want ≥ 0", o.Limit)
	case o.MaxNewTokens <= 0:
		return nil, fmt.Errorf("--max-new-tokens %d: want ≥ 1", o.MaxNewTokens)
	case o.Threads < 0:
		return nil, fmt.Errorf("--threads %d: want ≥ 0", o.Threads)
	}
	for _, field := range o.SplitBy {
		if field == "" {
			return nil, fmt.Errorf("--split-by: empty field name")
		}
	}
	if st, err := os.Stat(o.Model); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("--model %s: not a model folder", o.Model)
	}
	job := orchestrator.Job{
		ID: setting.Of(JobID), Model: setting.Of(o.Model), Prompts: setting.Of(o.Prompts), Limit: setting.Of(o.Limit),
		GroupSize: setting.Of(o.Samples), Seed: setting.Of(o.Seed), Threads: setting.Of(o.Threads),
		// Temperature 0 means "default" in a job; the flag's 0 is greedy.
		Sampling: orchestrator.SamplingSpec{Temperature: setting.Of(o.Temperature), Greedy: setting.Of(o.Temperature == 0), MaxNewTokens: setting.Of(o.MaxNewTokens)},
	}
	if err := job.Normalize(); err != nil {
		return nil, err
	}
	set, err := prompt.ReadFile(job.Prompts.Get(), job.Limit.Get(), false)
	if err != nil {
		return nil, fmt.Errorf("--prompts: %w", err)
	}
	if len(set.Prompts) == 0 {
		return nil, fmt.Errorf("--prompts %s: no prompts", job.Prompts.Get())
	}
	e := &Eval{Job: job, Prompts: set.Prompts, SplitBy: o.SplitBy, samplesOut: o.SamplesOut}
	if o.SamplesOut != "" {
		// Opened before the sampling so that a bad name fails at once; a
		// file sink creates its file only with the first group, so an
		// evaluation that fails leaves nothing behind.
		if strings.Contains(o.SamplesOut, "://") {
			return nil, fmt.Errorf("--samples-out %s: want a .jsonl or .parquet file", o.SamplesOut)
		}
		if err := checkOutput(o); err != nil {
			return nil, err
		}
		if e.samples, err = sink.OpenSink(ctx, o.SamplesOut, job.ID.Get(), true); err != nil {
			return nil, fmt.Errorf("--samples-out: %w", err)
		}
	}
	return e, nil
}

// checkOutput refuses a SamplesOut that is one of the evaluation's inputs
// (the same file, not only the same name: a link counts): the prompts file
// or a file of the model folder, which writing the samples would destroy.
func checkOutput(o Options) error {
	out := samefile.Path{Flag: "--samples-out", Path: o.SamplesOut}
	if err := samefile.Refuse(out, samefile.Path{Flag: "--prompts", Path: o.Prompts}); err != nil {
		return err
	}
	return filepath.WalkDir(o.Model, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // an unreadable entry is not the output's file
		}
		return samefile.Refuse(out, samefile.Path{Flag: "--model", Path: path})
	})
}

// Run samples the evaluation with trainer.Evaluate, logging to logger, and
// writes the groups to the samples' sink when there is one (closing it).
// It returns the figures and the groups they were computed from.
func (e *Eval) Run(ctx context.Context, logger *slog.Logger) (trainer.EvalMetrics, []traj.Group, error) {
	ev, groups, err := trainer.Evaluate(ctx, e.Job, e.Prompts, e.SplitBy, logger)
	if err != nil {
		return ev, nil, err
	}
	if e.samples != nil {
		for i := range groups {
			if _, err := e.samples.WriteGroup(ctx, &groups[i]); err != nil {
				e.samples.Close()
				return ev, nil, fmt.Errorf("write %s: %w", e.samplesOut, err)
			}
		}
		if err := e.samples.Close(); err != nil {
			return ev, nil, fmt.Errorf("write %s: %w", e.samplesOut, err)
		}
	}
	return ev, groups, nil
}
