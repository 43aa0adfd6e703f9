package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/recipe/bpetrain"
	"github.com/toolrl/toolrl/recipe/calcdata"
	"github.com/toolrl/toolrl/recipe/calceval"
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
			problems, err := calcdata.WritePromptFile(out, split, n)
			if err != nil {
				return fmt.Errorf("model data: %w", err)
			}
			easy := calcdata.CountEasy(problems)
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
	var out, tokPath, snapDir, mixName string
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
			if err := o.Check(snapDir, cmd.Flags().Changed("snapshot-every")); err != nil {
				return usageErrorf("model train: %v", err)
			}
			mix, err := calcdata.ParseMix(mixName)
			if err != nil {
				return usageErrorf("model train: --mix: %v", err)
			}
			o.Mix = mix
			if tokPath == "" {
				tokPath = filepath.Join(out, "tokenizer.json")
			}
			tok, err := bpetrain.Load(tokPath)
			if err != nil {
				return usageErrorf("model train: %v (run `toolrl model tokenizer --out %s` first)", err, tokPath)
			}
			if snapDir != "" {
				o.Snapshot = calcdata.SnapshotTo(snapDir, tok)
			}
			m, res, err := calcdata.TrainPolicy(cmd.Context(), tok, o)
			if err != nil {
				return fmt.Errorf("model train: %w", err)
			}
			slog.Info("trained", "steps", res.Steps, "loss", res.LastLoss, "eval_loss", res.EvalLoss, "elapsed", res.Elapsed.String(), "gemm", train.KernelName())
			return calcdata.WriteModel(out, m, tok)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "models/calc", "model folder to write")
	fl.StringVar(&tokPath, "tokenizer", "", "tokenizer.json (default: <out>/tokenizer.json)")
	fl.StringVar(&mixName, "mix", "default", "training mix: default (models/calc) | overcall (models/calc-overcall, with --steps 8000; docs/calc.md)")
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

func newModelEvalCmd() *cobra.Command {
	var f calceval.Options
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Measure a policy on held-out prompts through the orchestrator (the rollout's loop, tools and rewards)",
		Long: `eval samples --samples completions of every prompt with the orchestrator, as
toolrl rollout and toolrl train's evaluation do (trainer.Evaluate: the same
loop, tool calls, rewards and accounting; nothing is written unless
--samples-out), and prints the figures overall and split by the prompts'
meta fields (--split-by, default difficulty): accuracy and call rate, each with
its 95% interval over prompts (cluster-robust, CR1) and over samples (Wilson),
calls per trajectory, invalid calls and
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
			return runCalcEval(cmd, f, asJSON)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Model, "model", "models/calc", "model folder")
	fl.StringVar(&f.Prompts, "prompts", "data/calc/prompts.jsonl", "held-out prompts (JSONL: id, prompt, answer, meta)")
	fl.IntVar(&f.Samples, "samples", 8, "samples per prompt (G, the group size)")
	fl.IntVar(&f.Limit, "limit", 0, "evaluate only the first N prompts (0: all)")
	fl.Float64Var(&f.Temperature, "temperature", 1, "sampling temperature (0: greedy)")
	fl.Uint64Var(&f.Seed, "seed", 1, "job seed (per-sample seeds derive from it)")
	fl.IntVar(&f.MaxNewTokens, "max-new-tokens", 64, "most tokens sampled per model turn")
	fl.IntVar(&f.Threads, "threads", 0, "ONNX Runtime intra-op threads (0: one per core)")
	fl.StringSliceVar(&f.SplitBy, "split-by", []string{"difficulty"}, "prompt meta fields to split the figures by (comma-separated; empty: overall only)")
	fl.StringVar(&f.SamplesOut, "samples-out", "", "also write the sampled groups' trajectories, as toolrl rollout writes them (FILE.jsonl or FILE.parquet)")
	fl.BoolVar(&asJSON, "json", false, "print the evaluation's figures as one JSON object (trainer.EvalMetrics) instead of the table")
	return cmd
}

// runCalcEval evaluates with calceval (trainer.Evaluate) and prints the
// figures.
func runCalcEval(cmd *cobra.Command, f calceval.Options, asJSON bool) error {
	ctx := cmd.Context()
	e, err := calceval.New(ctx, f)
	if err != nil {
		return usageError{err}
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	ev, groups, err := e.Run(ctx, logger)
	if err != nil {
		return fmt.Errorf("model eval: %w", err)
	}
	out := cmd.OutOrStdout()
	if asJSON {
		return json.NewEncoder(out).Encode(ev)
	}
	if err := e.WriteReport(out, ev, groups); err != nil {
		return fmt.Errorf("model eval: %w", err)
	}
	return nil
}
