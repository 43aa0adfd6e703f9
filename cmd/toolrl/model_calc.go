package main

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/curves"
	"github.com/toolrl/toolrl/internal/atomicfile"
	"github.com/toolrl/toolrl/internal/samefile"
	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/recipe/bpetrain"
	"github.com/toolrl/toolrl/recipe/calcdata"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/sink"
	"github.com/toolrl/toolrl/trainer"
	"github.com/toolrl/toolrl/traj"
)

// newModelCalcCmds returns the default policy's verbs (data, tokenizer, train, eval).
func newModelCalcCmds() []*cobra.Command {
	return []*cobra.Command{newModelDataCmd(), newModelTokenizerCmd(), newModelTrainCmd(), newModelEvalCmd()}
}

func newModelDataCmd() *cobra.Command {
	var out, splitName string
	var n int
	cmd := &cobra.Command{
		Use:   "data",
		Short: "Write a calc prompt set: the held-out test prompts or the RL prompts (JSONL: id, prompt, answer, meta.difficulty)",
		Long: fmt.Sprintf(`data writes one of the two shipped calc prompt sets, one JSON object a line:
{"id","prompt","answer","meta":{"difficulty":"easy"|"hard"}}.

  --split test  the held-out evaluation prompts (seed %d, ids calc-NNNN),
                %d by default, %s
  --split rl    the RL training prompts (seed %d, ids calc-rl-NNNN), %d by
                default, %s; none is one of the %d held-out
                prompts or a prompt the shipped model was trained on, and the
                held-out set's share of easy prompts is kept

difficulty is "easy" for a problem drawn easy (one operation on operands 1-5),
"hard" otherwise. Only the first %d test prompts are kept out of training and
of the RL set: a larger --n for test adds prompts that may overlap them.`,
			calcdata.TestSeed, calcdata.HeldOut, calcdata.SplitTest.Path(),
			calcdata.RLSeed, calcdata.RLPrompts, calcdata.SplitRL.Path(), calcdata.HeldOut, calcdata.HeldOut),
		Example: `  toolrl model data --out data/calc/prompts.jsonl
  toolrl model data --split rl --out data/calc/rl.jsonl
  toolrl model data --split rl --n 4096 --out /tmp/rl-4k.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			split, err := calcdata.ParseSplit(splitName)
			if err != nil {
				return usageErrorf("--split: %v", err)
			}
			if !cmd.Flags().Changed("n") {
				n = split.Size()
			}
			if n <= 0 {
				return usageErrorf("--n must be positive, got %d", n)
			}
			if out == "" {
				out = split.Path()
			}
			problems, err := split.Problems(n)
			if err != nil {
				return fmt.Errorf("model data: %w", err)
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return fmt.Errorf("model data: %w", err)
			}
			if err := atomicfile.Write(out, func(w io.Writer) error { return calcdata.WritePrompts(w, split, problems) }); err != nil {
				return fmt.Errorf("model data %s: %w", out, err)
			}
			easy := 0
			for _, p := range problems {
				if p.Difficulty() == calcdata.DifficultyEasy {
					easy++
				}
			}
			slog.Info("wrote calc prompts", "split", split, "path", out, "n", n, "easy", easy, "hard", n-easy)
			return nil
		},
	}
	cmd.Flags().StringVar(&splitName, "split", string(calcdata.SplitTest), "prompt set: test (held-out evaluation) or rl (RL training)")
	cmd.Flags().StringVar(&out, "out", "", fmt.Sprintf("output JSONL path (default: %s for test, %s for rl)", calcdata.SplitTest.Path(), calcdata.SplitRL.Path()))
	cmd.Flags().IntVar(&n, "n", 0, fmt.Sprintf("number of prompts (default: %d for test, %d for rl)", calcdata.HeldOut, calcdata.RLPrompts))
	return cmd
}

func newModelTokenizerCmd() *cobra.Command {
	var out string
	var vocab int
	cmd := &cobra.Command{
		Use:     "tokenizer",
		Short:   "Train the calc policy's byte-level BPE and write tokenizer.json",
		Example: `  toolrl model tokenizer --out models/calc/tokenizer.json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := calcdata.TrainTokenizer(vocab)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return fmt.Errorf("model tokenizer: %w", err)
			}
			if err := tok.WriteFile(out); err != nil {
				return err
			}
			slog.Info("wrote tokenizer", "path", out, "vocab", tok.VocabSize(), "merges", len(tok.Merges))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "models/calc/tokenizer.json", "output tokenizer.json path")
	cmd.Flags().IntVar(&vocab, "vocab", calcdata.VocabSize, "vocabulary size (bytes + merges + 1 special)")
	return cmd
}

func newModelTrainCmd() *cobra.Command {
	var out, tokPath, snapDir string
	o := calcdata.DefaultPolicyOptions()
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train the default calc policy in pure Go and write its model folder",
		Long: `train generates the word-problem training set, encodes it with the folder's
tokenizer.json (run "toolrl model tokenizer" first), trains a small Llama with
AdamW under a cosine schedule (loss on the policy's tokens only; tool results
masked), and writes model.safetensors, config.json, generation_config.json,
tokenizer_config.json, tools.yaml, prompt_format.json and model.onnx.
Everything is seeded: the same flags on the same build give the same bytes.
Build with GOEXPERIMENT=simd for the AVX GEMM kernel (make model does).`,
		Example: `  toolrl model train --out models/calc
  toolrl model train --out /tmp/calc-small --steps 200 --dim 64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkModelTrainFlags(cmd.Flags().Changed, o, snapDir); err != nil {
				return err
			}
			if tokPath == "" {
				tokPath = filepath.Join(out, "tokenizer.json")
			}
			tok, err := bpetrain.Load(tokPath)
			if err != nil {
				return usageErrorf("model train: %v (run `toolrl model tokenizer --out %s` first)", err, tokPath)
			}
			if snapDir != "" {
				o.Snapshot = func(m *train.Model, step int) error {
					return writeCalcModel(filepath.Join(snapDir, fmt.Sprintf("step-%06d", step)), m, tok)
				}
			}
			m, res, err := calcdata.TrainPolicy(cmd.Context(), tok, o)
			if err != nil {
				return fmt.Errorf("model train: %w", err)
			}
			slog.Info("trained", "steps", res.Steps, "loss", res.LastLoss, "eval_loss", res.EvalLoss, "elapsed", res.Elapsed.String(), "gemm", train.KernelName())
			return writeCalcModel(out, m, tok)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "models/calc", "model folder to write")
	fl.StringVar(&tokPath, "tokenizer", "", "tokenizer.json (default: <out>/tokenizer.json)")
	fl.IntVar(&o.Train.Steps, "steps", o.Train.Steps, "optimiser steps")
	fl.IntVar(&o.Train.BatchSize, "batch", o.Train.BatchSize, "sequences per step")
	fl.IntVar(&o.Examples, "examples", o.Examples, "training examples generated")
	fl.Float64Var(&o.Train.LR, "lr", o.Train.LR, "peak learning rate")
	fl.IntVar(&o.Model.Dim, "dim", o.Model.Dim, "hidden size")
	fl.IntVar(&o.Model.Layers, "layers", o.Model.Layers, "decoder layers")
	fl.IntVar(&o.Model.Heads, "heads", o.Model.Heads, "attention heads")
	fl.IntVar(&o.Model.KVHeads, "kv-heads", o.Model.KVHeads, "key/value heads")
	fl.IntVar(&o.Model.FF, "ff", o.Model.FF, "MLP intermediate size")
	fl.IntVar(&o.Model.MaxPos, "max-pos", o.Model.MaxPos, "maximum sequence length")
	fl.Uint64Var(&o.Seed, "seed", o.Seed, "initialisation seed")
	fl.Uint64Var(&o.Train.Seed, "data-seed", o.Train.Seed, "data-order seed")
	fl.IntVar(&o.Train.LogEvery, "log-every", o.Train.LogEvery, "log every N steps")
	fl.StringVar(&snapDir, "snapshot-dir", "", "write intermediate model folders here (step-NNNNNN)")
	fl.IntVar(&o.Train.SnapshotEvery, "snapshot-every", 500, "steps between snapshots (with --snapshot-dir)")
	return cmd
}

// checkModelTrainFlags refuses the train command's flag values that are not
// positive, naming the flag: --log-every 0 or below was silently 50 and
// --snapshot-every 0 or below silently wrote no snapshot. set reports
// whether a flag was given.
func checkModelTrainFlags(set func(string) bool, o calcdata.PolicyOptions, snapDir string) error {
	for _, f := range []struct {
		name  string
		value int
		what  string
	}{
		{"steps", o.Train.Steps, "optimiser steps"}, {"batch", o.Train.BatchSize, "sequences per step"},
		{"examples", o.Examples, "training examples"}, {"log-every", o.Train.LogEvery, "steps between loss lines"},
		{"snapshot-every", o.Train.SnapshotEvery, "steps between snapshots"},
		{"dim", o.Model.Dim, "hidden size"}, {"layers", o.Model.Layers, "decoder layers"},
		{"heads", o.Model.Heads, "attention heads"}, {"kv-heads", o.Model.KVHeads, "key/value heads"},
		{"ff", o.Model.FF, "MLP size"}, {"max-pos", o.Model.MaxPos, "sequence length"},
	} {
		if f.value < 1 {
			return usageErrorf("model train: --%s %d: want ≥ 1 (%s)", f.name, f.value, f.what)
		}
	}
	if !(o.Train.LR > 0) || math.IsInf(o.Train.LR, 0) {
		return usageErrorf("model train: --lr %g: want a finite value > 0", o.Train.LR)
	}
	if set("snapshot-every") && snapDir == "" {
		return usageErrorf("model train: --snapshot-every needs --snapshot-dir (without it no snapshot is written)")
	}
	return nil
}

// writeCalcModel writes the whole HF folder: weights, config, ONNX, the
// tokenizer and the calc policy's prompt format and tools.
func writeCalcModel(dir string, m *train.Model, tok *bpetrain.Tokenizer) error {
	tj, err := tok.MarshalJSON()
	if err != nil {
		return err
	}
	sp := int(tok.SpecialID())
	files, err := calcdata.FolderFiles(tj, sp, bpetrain.SpecialToken)
	if err != nil {
		return fmt.Errorf("write model %s: %w", dir, err)
	}
	if err := m.WriteFolder(dir, sp, sp, sp, files); err != nil {
		return err
	}
	slog.Info("wrote model folder", "dir", dir)
	return nil
}

// calcEvalFlags are the eval command's knobs.
type calcEvalFlags struct {
	model, prompts string
	samples, limit int
	temperature    float64
	seed           uint64
	maxNew         int
	threads        int
	splitBy        []string
	samplesOut     string
	asJSON         bool
}

// calcEvalJobID is the evaluation's job id: trajectory ids are
// eval/PROMPT/i. Sample seeds do not depend on it (actor.SampleSeed(seed,
// prompt id, i)).
const calcEvalJobID = "eval"

func newModelEvalCmd() *cobra.Command {
	var f calcEvalFlags
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Measure a policy on held-out prompts through the orchestrator (the rollout's loop, tools and rewards)",
		Long: `eval samples --samples completions of every prompt with the orchestrator, as
toolrl rollout and toolrl train's evaluation do (trainer.Evaluate: the same
loop, tool calls, rewards and accounting; nothing is written unless
--samples-out), and prints the figures overall and split by the prompts'
meta fields (--split-by, default difficulty): accuracy with its 95% Wilson
interval over samples, call rate, calls per trajectory, invalid calls and
timeouts (shares of calls), the groups whose samples are not all right or all
wrong (unequal correctness) and whose staged rewards are not all equal,
the mean reward and the mean response length.

A sample is right when the orchestrator's answer check (rewards.extract:
\boxed{N}, "The answer is N", else the last number) finds the reference
answer. Per-sample seeds are actor.SampleSeed(--seed, prompt id, i), as in a
rollout of the same seed. --temperature 0 is greedy decoding. --json prints
the trainer's EvalMetrics (one eval.jsonl line) instead of the table.`,
		Example: `  toolrl model eval --model models/calc --prompts data/calc/prompts.jsonl --samples 8 --temperature 1
  toolrl model eval --model out/run1/policy/v000003 --limit 64 --json
  toolrl model eval --limit 16 --samples-out /tmp/eval.jsonl && toolrl inspect /tmp/eval.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCalcEval(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "models/calc", "model folder")
	fl.StringVar(&f.prompts, "prompts", "data/calc/prompts.jsonl", "held-out prompts (JSONL: id, prompt, answer, meta)")
	fl.IntVar(&f.samples, "samples", 8, "samples per prompt (G, the group size)")
	fl.IntVar(&f.limit, "limit", 0, "evaluate only the first N prompts (0: all)")
	fl.Float64Var(&f.temperature, "temperature", 1, "sampling temperature (0: greedy)")
	fl.Uint64Var(&f.seed, "seed", 1, "job seed (per-sample seeds derive from it)")
	fl.IntVar(&f.maxNew, "max-new-tokens", 64, "most tokens sampled per model turn")
	fl.IntVar(&f.threads, "threads", 0, "ONNX Runtime intra-op threads (0: one per core)")
	fl.StringSliceVar(&f.splitBy, "split-by", []string{"difficulty"}, "prompt meta fields to split the figures by (comma-separated; empty: overall only)")
	fl.StringVar(&f.samplesOut, "samples-out", "", "also write the sampled groups' trajectories, as toolrl rollout writes them (FILE.jsonl or FILE.parquet)")
	fl.BoolVar(&f.asJSON, "json", false, "print the evaluation's figures as one JSON object (trainer.EvalMetrics) instead of the table")
	return cmd
}

// calcEvalJob builds the rollout job that eval runs from the flags and reads
// its prompts; every error is the user's to fix.
func calcEvalJob(f calcEvalFlags) (orchestrator.Job, []orchestrator.Prompt, error) {
	switch {
	case f.samples <= 0:
		return orchestrator.Job{}, nil, usageErrorf("--samples %d: want ≥ 1", f.samples)
	case !(f.temperature >= 0):
		return orchestrator.Job{}, nil, usageErrorf("--temperature %g: want ≥ 0", f.temperature)
	case f.limit < 0:
		return orchestrator.Job{}, nil, usageErrorf("--limit %d: want ≥ 0", f.limit)
	case f.maxNew <= 0:
		return orchestrator.Job{}, nil, usageErrorf("--max-new-tokens %d: want ≥ 1", f.maxNew)
	case f.threads < 0:
		return orchestrator.Job{}, nil, usageErrorf("--threads %d: want ≥ 0", f.threads)
	}
	for _, field := range f.splitBy {
		if field == "" {
			return orchestrator.Job{}, nil, usageErrorf("--split-by: empty field name")
		}
	}
	if st, err := os.Stat(f.model); err != nil || !st.IsDir() {
		return orchestrator.Job{}, nil, usageErrorf("--model %s: not a model folder", f.model)
	}
	job := orchestrator.Job{
		ID: setting.Of(calcEvalJobID), Model: setting.Of(f.model), Prompts: setting.Of(f.prompts), Limit: setting.Of(f.limit),
		GroupSize: setting.Of(f.samples), Seed: setting.Of(f.seed), Threads: setting.Of(f.threads),
		// Temperature 0 means "default" in a job; the flag's 0 is greedy.
		Sampling: orchestrator.SamplingSpec{Temperature: setting.Of(f.temperature), Greedy: setting.Of(f.temperature == 0), MaxNewTokens: setting.Of(f.maxNew)},
	}
	if err := job.Normalize(); err != nil {
		return job, nil, usageError{err}
	}
	set, err := orchestrator.ReadPrompts(job.Prompts.Get(), job.Limit.Get(), false)
	if err != nil {
		return job, nil, usageErrorf("--prompts: %v", err)
	}
	if len(set.Prompts) == 0 {
		return job, nil, usageErrorf("--prompts %s: no prompts", job.Prompts.Get())
	}
	return job, set.Prompts, nil
}

// runCalcEval evaluates with trainer.Evaluate and prints the figures.
func runCalcEval(cmd *cobra.Command, f calcEvalFlags) error {
	ctx := cmd.Context()
	job, prompts, err := calcEvalJob(f)
	if err != nil {
		return err
	}
	var samples sink.Sink
	if f.samplesOut != "" {
		// Opened before the sampling so that a bad name fails at once; a
		// file sink creates its file only with the first group, so an
		// evaluation that fails leaves nothing behind.
		if strings.Contains(f.samplesOut, "://") {
			return usageErrorf("--samples-out %s: want a .jsonl or .parquet file", f.samplesOut)
		}
		if err := checkEvalOutput(f); err != nil {
			return err
		}
		if samples, err = sink.OpenSink(ctx, f.samplesOut, job.ID.Get(), true); err != nil {
			return usageErrorf("--samples-out: %v", err)
		}
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	ev, groups, err := trainer.Evaluate(ctx, job, prompts, f.splitBy, logger)
	if err != nil {
		return fmt.Errorf("model eval: %w", err)
	}
	if samples != nil {
		for i := range groups {
			if _, err := samples.WriteGroup(ctx, &groups[i]); err != nil {
				samples.Close()
				return fmt.Errorf("model eval: write %s: %w", f.samplesOut, err)
			}
		}
		if err := samples.Close(); err != nil {
			return fmt.Errorf("model eval: write %s: %w", f.samplesOut, err)
		}
	}
	out := cmd.OutOrStdout()
	if f.asJSON {
		return json.NewEncoder(out).Encode(ev)
	}
	temperature := fmt.Sprintf("T=%g", job.Sampling.Temperature.Get())
	if job.Sampling.Temperature.Get() == 0 {
		temperature = "greedy"
	}
	fmt.Fprintf(out, "model eval: %s on %d prompts of %s, %d samples each, %s, seed %d: %.1f s\n",
		job.Model.Get(), ev.Prompts, job.Prompts.Get(), job.GroupSize.Get(), temperature, job.Seed.Get(), ev.Overall.Seconds)
	return writeEvalTable(out, &job, ev, groups, f.splitBy)
}

// checkEvalOutput refuses a --samples-out that is one of the evaluation's
// inputs (the same file, not only the same name: a link counts): the
// prompts file or a file of the model folder, which writing the samples
// would destroy.
func checkEvalOutput(f calcEvalFlags) error {
	out := samefile.Path{Flag: "--samples-out", Path: f.samplesOut}
	if err := samefile.Refuse(out, samefile.Path{Flag: "--prompts", Path: f.prompts}); err != nil {
		return usageError{err}
	}
	return filepath.WalkDir(f.model, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // an unreadable entry is not the output's file
		}
		if err := samefile.Refuse(out, samefile.Path{Flag: "--model", Path: path}); err != nil {
			return usageError{err}
		}
		return nil
	})
}

// evalColumn is one column of the eval table: all prompts, or the prompts
// with one value of a split field.
type evalColumn struct {
	name  string
	stats trainer.RolloutStats
	// groups and unequal count the column's groups and those whose samples
	// are not all right or all wrong.
	groups, unequal int
}

// writeEvalTable prints ev as a table with one column for all prompts and
// one per value of each split field. The figures are ev's; the one figure
// EvalMetrics lacks, groups with unequal correctness, is counted from the
// groups with the job's own answer check (job.Rewards.Score, as the
// orchestrator's accounting does; the job must be normalized).
func writeEvalTable(w io.Writer, job *orchestrator.Job, ev trainer.EvalMetrics, groups []traj.Group, splitBy []string) error {
	cols := []*evalColumn{{name: "all", stats: ev.Overall}}
	byName := map[string]*evalColumn{"all": cols[0]}
	for _, field := range splitBy {
		split := ev.Split[field]
		for _, value := range slices.Sorted(maps.Keys(split)) {
			c := &evalColumn{name: field + "=" + value, stats: split[value]}
			cols = append(cols, c)
			byName[c.name] = c
		}
	}
	for i := range groups {
		g := &groups[i]
		unequal := unequalCorrectness(job, g)
		names := []string{"all"}
		for _, field := range splitBy {
			value, err := metaValue(g, field)
			if err != nil {
				return err
			}
			names = append(names, field+"="+value)
		}
		for _, name := range names {
			c, ok := byName[name]
			if !ok {
				return fmt.Errorf("model eval: group %s falls in %s, which the evaluation has no figures for", g.GroupID, name)
			}
			c.groups++
			if unequal {
				c.unequal++
			}
		}
	}
	for _, c := range cols {
		if c.groups != c.stats.Groups {
			return fmt.Errorf("model eval: %s: %d groups sampled, %d in the evaluation's figures", c.name, c.groups, c.stats.Groups)
		}
	}
	rows := []struct {
		label string
		cell  func(c *evalColumn) string
	}{
		{"prompts", func(c *evalColumn) string { return fmt.Sprint(c.stats.Groups) }},
		{"samples", func(c *evalColumn) string { return fmt.Sprint(c.stats.Trajectories) }},
		{"accuracy", func(c *evalColumn) string { return share(c.stats.Accuracy, c.stats.Trajectories) }},
		{"  95% interval (Wilson)", func(c *evalColumn) string {
			lo, hi := curves.Wilson(c.stats.Accuracy, c.stats.Trajectories)
			return fmt.Sprintf("%.1f–%.1f%%", 100*lo, 100*hi)
		}},
		{"call rate", func(c *evalColumn) string { return share(c.stats.CallRate, c.stats.Trajectories) }},
		{"calls per trajectory", func(c *evalColumn) string { return fmt.Sprintf("%.2f", c.stats.CallsPerTrajectory) }},
		{"invalid calls", func(c *evalColumn) string { return share(c.stats.InvalidCallRate, calls(c.stats)) }},
		{"timeouts", func(c *evalColumn) string { return share(c.stats.TimeoutRate, calls(c.stats)) }},
		{"groups, unequal correctness", func(c *evalColumn) string {
			return share(float64(c.unequal)/float64(max(c.groups, 1)), c.groups)
		}},
		{"groups, unequal rewards", func(c *evalColumn) string { return share(c.stats.GroupsWithSignal, c.stats.Groups) }},
		{"reward mean", func(c *evalColumn) string { return fmt.Sprintf("%.3f", c.stats.RewardMean) }},
		{"response tokens mean", func(c *evalColumn) string { return fmt.Sprintf("%.1f", c.stats.ResponseTokens) }},
	}
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, c := range cols {
		fmt.Fprintf(tw, "\t%s", c.name)
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		fmt.Fprint(tw, r.label)
		for _, c := range cols {
			fmt.Fprintf(tw, "\t%s", r.cell(c))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// unequalCorrectness reports whether some of g's samples are right and some
// wrong by the job's answer check.
func unequalCorrectness(job *orchestrator.Job, g *traj.Group) bool {
	right := 0
	for i := range g.Trajectories {
		t := g.Trajectories[i] // Score sets the reward: score a copy
		if job.Rewards.Score(&t, t.Answer) {
			right++
		}
	}
	return right > 0 && right < len(g.Trajectories)
}

// metaValue is the value of g's prompt meta field as the evaluation's split
// names it (fmt.Sprint of the JSON value; "(none)" when the field is absent).
func metaValue(g *traj.Group, field string) (string, error) {
	meta := g.Trajectories[0].Meta
	if len(meta) == 0 {
		return "(none)", nil
	}
	var fields map[string]any
	if err := json.Unmarshal(meta, &fields); err != nil {
		return "", fmt.Errorf("model eval: prompt %s: meta is not a JSON object: %w", g.PromptID, err)
	}
	v, ok := fields[field]
	if !ok {
		return "(none)", nil
	}
	return fmt.Sprint(v), nil
}

// calls is the number of tool calls behind stats' per-call rates.
func calls(s trainer.RolloutStats) int { return count(s.CallsPerTrajectory, s.Trajectories) }

// count turns a share of n back into the count it was computed from (the
// figures are k/n in float64, so the rounding is exact).
func count(rate float64, n int) int { return int(math.Round(rate * float64(n))) }

// share formats a rate of n as "91.3% (1870/2048)", or "n/a" when n is 0.
func share(rate float64, n int) string {
	if n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%% (%d/%d)", 100*rate, count(rate, n), n)
}
