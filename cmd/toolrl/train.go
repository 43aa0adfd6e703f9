package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/internal/interrupt"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/trainer"
)

func newTrainCmd() *cobra.Command {
	var configPath, out, redisURL string
	var resume, async bool
	var seed uint64
	var overrides []string
	cmd := &cobra.Command{
		Use:   "train --config FILE",
		Short: "Run the closed loop: rollout, advantages, learner update, publish, reload — iteration after iteration",
		Long: `train runs toolrl's RL loop in one process, no services to start. Each
iteration samples a group for prompts_per_iteration prompts of the RL prompt
set with the current policy version (the orchestrator, as toolrl rollout),
computes GRPO advantages (as toolrl advantage), takes one learner update (as
toolrl learn) and publishes the next version into OUT/policy, which the next
iteration samples with. Every eval.every iterations (and before the first)
the current version is evaluated on the held-out eval.prompts at a fixed
seed, split by the meta fields in eval.split_by.

The config (YAML, strict keys; docs/train.md) holds the rollout job, the
advantage math, the learner's knobs, iterations, prompts_per_iteration, the
evaluation and out. --set KEY=VALUE overrides any of its keys, e.g.
--set learner.lr=1e-4 --set rollout.sampling.temperature=0.8 (docs/settings.md
lists them). With async: true (or --async) each iteration's rollout
overlaps the previous update: rollouts are one version behind the learner,
which the ratio corrects; otherwise the loop is strictly on-policy and, for a
seed, deterministic (the same metrics, timings aside, and the same weights).
With rollout_quantization (e.g. bits: 8) actors sample an int8/int4 copy of
each version (OUT/policy/vN/quantized/, version 0's in OUT/base/quantized/)
while the learner trains float32 weights; learner.tis_cap corrects the gap,
which metrics.jsonl's rollout_mismatch reports.

OUT gets metrics.jsonl (one line per iteration: rollout, advantage and
learner figures, seconds per phase), eval.jsonl, trajectories.jsonl (the
groups trained on) and policy/ (the versions). toolrl plot OUT draws them.
SIGINT or SIGTERM finishes the iteration in progress, publishes it and exits
130; --resume continues from the last published version and iteration.`,
		Example: `  toolrl train --config experiments/calc-smoke.yaml
  toolrl train --config experiments/calc-smoke.yaml --out out/run2 --async
  toolrl train --config experiments/calc-smoke.yaml --resume
  toolrl train --config experiments/calc-int8.yaml --seed 1 --out out/int8-s1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if configPath == "" {
				return usageErrorf("train: --config is required")
			}
			cfg, err := trainer.LoadConfig(configPath)
			if err != nil {
				return usageErrorf("train: %v", err)
			}
			if out != "" {
				cfg.Out.Set(out, setting.Flag)
			}
			if cmd.Flags().Changed("async") {
				cfg.Async.Set(async, setting.Flag)
			}
			if cmd.Flags().Changed("seed") {
				// The rollout's seed (and the learner's when the config sets
				// none); the evaluation keeps its own, so runs compare.
				cfg.Rollout.Seed.Set(seed, setting.Flag)
			}
			if err := setting.SetAll(&cfg, overrides, setting.Override); err != nil {
				return usageErrorf("train: --set %v", err)
			}
			if err := cfg.Normalize(); err != nil {
				return usageErrorf("train: %s: %v", configPath, err)
			}
			return runTrain(cmd, cfg, resume, redisURL)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&configPath, "config", "", "training config (YAML; docs/train.md)")
	fs.StringVar(&out, "out", "", "output folder (overrides the config's out)")
	fs.Uint64Var(&seed, "seed", 0, "override rollout.seed (the prompt stream and sampling; the evaluation keeps eval.seed)")
	fs.StringArrayVar(&overrides, "set", nil, "override a config key, KEY=VALUE (e.g. learner.lr=1e-4, rollout.sampling.temperature=0.8); repeatable, applied after the file and the other flags (docs/settings.md)")
	fs.BoolVar(&resume, "resume", false, "continue from the last published version and iteration in OUT")
	fs.BoolVar(&async, "async", false, "overlap each rollout with the previous update (one version of staleness)")
	fs.StringVar(&redisURL, "redis", "", "drive a distributed run on this Redis: workers (toolrl rollout --worker --follow --watch redis) and advantage services run elsewhere")
	return cmd
}

func runTrain(cmd *cobra.Command, cfg trainer.Config, resume bool, redisURL string) error {
	stderr := cmd.ErrOrStderr()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The first signal finishes the iteration in progress; a second one
	// (a driver waiting on workers that are gone) returns at once.
	watch := interrupt.Start(cmd.Context(), func() {
		fmt.Fprintln(stderr, "train: stopping after the iteration in progress (Ctrl-C again to abandon it)")
	}, func() {
		fmt.Fprintln(stderr, "train: second signal: exiting now; the iteration in progress is lost (--resume redoes it)")
	})
	defer watch.Stop()
	ctx := watch.Context()
	progress := trainer.NewProgress(stderr, cfg.Iterations.Get())
	opts := trainer.Options{Resume: resume, Logger: logger, OnIteration: progress.Iteration, OnEval: progress.Eval}
	if redisURL != "" {
		if _, err := stream.ParseURL(redisURL, stream.ConnectOptions{}); err != nil {
			return usageErrorf("train: --redis: %v", err)
		}
		client, err := stream.Connect(ctx, redisURL, stream.ConnectOptions{ClientName: "toolrl-train"})
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		defer client.Close()
		opts.Redis = client
	}
	fmt.Fprintln(stderr, "train: "+cfg.Describe(stream.Redact(redisURL)))
	type outcome struct {
		res trainer.Result
		err error
	}
	finished := make(chan outcome, 1)
	go func() {
		res, err := trainer.Train(ctx, cfg, opts)
		finished <- outcome{res, err}
	}()
	var res trainer.Result
	var err error
	select {
	case o := <-finished:
		res, err = o.res, o.err
	case <-watch.Abandoned():
		progress.Finish()
		return exitError{code: exitInterrupted, err: errors.New("training abandoned by a second signal; the iteration in progress is lost (--resume redoes it)")}
	}
	progress.Finish()
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	res.Write(cmd.OutOrStdout())
	if res.Interrupted {
		return exitError{code: exitInterrupted, err: fmt.Errorf("training stopped by signal after iteration %d (version %d); continue with --resume", res.LastIteration, res.Version)}
	}
	return nil
}
