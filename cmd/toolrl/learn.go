package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/internal/metricsserver"
	"github.com/toolrl/toolrl/internal/samefile"
	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/stream"
)

type learnFlags struct {
	model, in, redisURL, job, store, metricsPath, listen string
	group, consumer, rolloutQuant, precision             string
	batch, publishEvery, keep, maxUpdates                int
	startVersion                                         int64
	temperature                                          float64
	maxWait                                              time.Duration
	// spec holds the learner's settings, bound as flags (learner.Spec).
	spec learner.Spec
}

func newLearnCmd() *cobra.Command {
	var f learnFlags
	cmd := &cobra.Command{
		Use:   "learn --model DIR (--in FILE | --redis URL --job JOB) --store DIR",
		Short: "Train the policy on advantage records (PPO-clip GRPO) and publish policy versions",
		Long: `learn is toolrl's GRPO learner: it reads advantage records (toolrl.advantage/v3,
or v1 with --temperature), recomputes the current policy's logprob of every
trained token (teacher-forced, at the record's sampling temperature, over the
full vocabulary, as the actor computes them), and takes PPO-clip steps:

  ratio = exp(clamp(logp − logp_behaviour, ±20))
  loss  = max(−A·ratio, −A·clip(ratio, 1−clip-low, 1+clip-high)), at most −dual-clip·A for A < 0
        (× min(π_learner_old/π_behaviour, tis-cap) with --tis-cap, the ratio then against π_learner_old)
        + kl-beta · k3(logp, logp_ref)

aggregated by --loss-agg, with AdamW (--lr, --warmup, --weight-decay,
--clip-grad) over --minibatches steps per batch and --epochs passes. Records
older than the learner's version minus --max-staleness are dropped and
counted. docs/learner.md has the formulas next to verl's and TRL's names.

Every --publish-every updates it publishes version N+1 into --store as a
complete Hugging Face folder (STORE/v00000N/ with config, tokenizer,
model.safetensors, onnx/model.onnx and the optimiser state, then the latest
pointer, atomically): the actor and transformers.js load it. A store that
already holds versions is resumed from its latest. --rollout-quantization
(e.g. int8-b32-acc4, as trajectories name it) also writes each version's
quantized copy for actors into STORE/v00000N/quantized/; the learner keeps
training the float32 weights, and --tis-cap corrects the gap between them.

With --in FILE (JSONL or Parquet) it trains on the file once (--batch records
per update; 0: the whole file as one batch) and publishes one version at the
end (or every --publish-every updates when given; the version then moves
during the file, and --max-staleness applies to the later batches). With --redis it
reads toolrl:{JOB}:advantages through consumer group --group, acknowledges
records only after the version trained on them is published, sets
toolrl:{JOB}:policy and policy_version, serves /metrics on --listen, and runs
until SIGINT/SIGTERM, which finishes and publishes the update in progress
(exit 130), or, with --max-updates N, until N updates have trained and been
published (exit 0). A restarted learner acknowledges what its latest version already
used and trains on the rest once.

--precision float64 runs the forward, backward, logprobs, loss gradient and
AdamW in float64 (gonum's Dgemm; several times slower than the float32
default), for checking another trainer against this learner on the same
batch; published versions stay float32 (docs/learner.md).

One JSON line per update goes to --metrics; a readable line to stderr.`,
		Example: `  toolrl learn --model models/calc --in out/advantages.jsonl --store out/policy --metrics out/learn.jsonl
  toolrl learn --model models/calc --redis redis://127.0.0.1:6379 --job calc-demo --store /shared/policy --batch 256 --kl-beta 0.01
  toolrl learn --model models/calc --in adv.parquet --store out/policy --minibatches 4 --epochs 2 --tis-cap 2 --loss-agg seq-mean-token-sum-norm
  toolrl learn --model models/calc --redis redis://127.0.0.1:6379 --job calc-int8 --store /shared/policy --rollout-quantization int8-b32-acc4 --tis-cap 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLearn(cmd, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.model, "model", "", "model folder of version 0 (config.json, model.safetensors, tokenizer)")
	fs.StringVar(&f.in, "in", "", "advantage records, JSONL or Parquet")
	fs.StringVar(&f.redisURL, "redis", "", "Redis URL: read the job's advantages stream (see docs/redis.md)")
	fs.StringVar(&f.job, "job", "", "job name of the Redis keys toolrl:{JOB}:*")
	fs.StringVar(&f.store, "store", "", "policy store folder the versions are published into")
	fs.StringVar(&f.metricsPath, "metrics", "", "append one JSON line of metrics per update to this file")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:9465", "with --redis: address for /metrics and /healthz (empty: none)")
	fs.StringVar(&f.group, "group", stream.LearnerGroup, "with --redis: the learner's consumer group")
	fs.StringVar(&f.consumer, "consumer", "learner", "with --redis: consumer name (keep it across restarts: a restart finds its pending records by it)")
	fs.IntVar(&f.batch, "batch", 0, "records per update (0: the whole file with --in, 256 with --redis)")
	fs.DurationVar(&f.maxWait, "max-wait", 10*time.Second, "with --redis: train on a partial batch after waiting this long")
	fs.IntVar(&f.publishEvery, "publish-every", 1, "publish a version every K updates (with --in, unset: once, at the end)")
	fs.IntVar(&f.maxUpdates, "max-updates", 0, "stop after N updates that trained, their version published (0: run until the file ends or a signal)")
	fs.IntVar(&f.keep, "keep", 0, "keep only the newest N versions in the store (0: keep all)")
	fs.Int64Var(&f.startVersion, "version", 0, "the policy version of --model (records are tagged with it)")
	fs.StringVar(&f.rolloutQuant, "rollout-quantization", "", "also publish each version's quantized copy for actors (STORE/vN/quantized/): int{8,4}-b{block}-acc{0,4}[-lmhead], e.g. int8-b32-acc4")
	fs.StringVar(&f.precision, "precision", string(train.Float32), "float32 | float64: the precision of the forward, backward and AdamW (float64: to check another trainer against this one; versions are published as float32 either way)")
	fs.Float64Var(&f.temperature, "temperature", 0, "sampling temperature of records that carry none (v1); 0: such a record is an error")
	setting.Bind(fs, &f.spec)
	alias := fs.VarPF(fs.Lookup("minibatches").Value, "minibatch", "", "alias of --minibatches")
	alias.DefValue = fs.Lookup("minibatches").DefValue
	_ = fs.MarkHidden("minibatch")
	return cmd
}

func runLearn(cmd *cobra.Command, f learnFlags) error {
	switch {
	case f.model == "":
		return usageErrorf("learn: --model is required")
	case f.store == "":
		return usageErrorf("learn: --store is required")
	case (f.in == "") == (f.redisURL == ""):
		return usageErrorf("learn: give exactly one of --in FILE and --redis URL")
	case f.redisURL != "" && f.job == "":
		return usageErrorf("learn: --redis needs --job")
	case f.batch < 0:
		return usageErrorf("learn: --batch %d: want ≥ 0", f.batch)
	case f.publishEvery < 1:
		return usageErrorf("learn: --publish-every %d: want ≥ 1", f.publishEvery)
	case f.maxUpdates < 0:
		return usageErrorf("learn: --max-updates %d: want ≥ 0", f.maxUpdates)
	case f.keep < 0:
		return usageErrorf("learn: --keep %d: want ≥ 0", f.keep)
	case f.startVersion < 0:
		return usageErrorf("learn: --version %d: want ≥ 0", f.startVersion)
	case f.temperature < 0:
		return usageErrorf("learn: --temperature %g: want > 0 (or 0 for none)", f.temperature)
	case f.redisURL != "" && f.maxWait <= 0:
		return usageErrorf("learn: --max-wait %v: want a duration > 0", f.maxWait)
	}
	in := samefile.Path{Flag: "--in", Path: f.in}
	if err := samefile.Refuse(samefile.Path{Flag: "--metrics", Path: f.metricsPath}, in); err != nil {
		return usageErrorf("learn: %v", err)
	}
	if err := samefile.Refuse(samefile.Path{Flag: "--store", Path: f.store}, in); err != nil {
		return usageErrorf("learn: %v", err)
	}
	opts, err := f.spec.Options()
	if err != nil {
		return usageErrorf("learn: %v", err)
	}
	if f.temperature > 0 {
		t := f.temperature
		opts.Temperature = &t
	}
	if err := opts.Validate(); err != nil {
		return usageErrorf("learn: %v", err)
	}
	precision, err := train.ParsePrecision(f.precision)
	if err != nil {
		return usageErrorf("learn: --precision: %v", err)
	}
	rolloutQuant, err := llama.ParseQuantization(f.rolloutQuant)
	if err != nil {
		return usageErrorf("learn: --rollout-quantization: %v", err)
	}
	if f.redisURL != "" {
		if err := stream.ValidateJob(f.job); err != nil {
			return usageErrorf("learn: --job: %v", err)
		}
		if _, err := stream.ParseURL(f.redisURL, stream.ConnectOptions{}); err != nil {
			return usageErrorf("learn: --redis: %v", err)
		}
	}
	stderr := cmd.ErrOrStderr()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signalContext(cmd)
	defer stop()

	models, err := learner.LoadModels(f.model, f.spec.RefModel.Get(), opts.Loss.KLBeta, precision)
	if err != nil {
		return fmt.Errorf("learn: %w", err)
	}
	base := models.Base
	base.RolloutQuantization = rolloutQuant
	l, err := learner.New(models.Policy, models.Ref, f.startVersion, opts)
	if err != nil {
		return usageErrorf("learn: %v", err)
	}
	store, err := policystore.Open(f.store)
	if err != nil {
		return fmt.Errorf("learn: %w", err)
	}
	defer store.Close()

	job := learner.Job{
		Store: store, Base: base, In: f.in, Redis: f.redisURL, Batch: f.batch,
		Stream:       learner.StreamOptions{Job: f.job, Group: f.group, Consumer: f.consumer, MaxWait: f.maxWait},
		PublishEvery: f.publishEvery, MaxUpdates: f.maxUpdates, Keep: f.keep, MetricsPath: f.metricsPath, Logger: logger,
		OnResume: func(st learner.State) {
			fmt.Fprintf(stderr, "learn: resumed from %s: version %d, %d optimiser steps; %d records of that version acknowledged\n",
				store.Dir(), st.Version, st.Steps, len(st.Consumed))
		},
		OnUpdate: func(m learner.Metrics) { fmt.Fprintln(stderr, m) },
		OnPublish: func(v policystore.Version, st learner.State) {
			fmt.Fprintf(stderr, "learn: published version %d → %s (%d records)\n", v.Number, v.Dir, st.Records)
		},
		OnSummary: func(s learner.Summary) { fmt.Fprintln(stderr, s) },
	}
	if f.in != "" && !cmd.Flags().Changed("publish-every") {
		job.PublishEvery = 0 // once, at the end
	}
	if f.redisURL != "" {
		reg := metricsserver.NewRegistry(build())
		job.Registry = reg
		if f.listen != "" {
			srv, err := metricsserver.Start(f.listen, metricsserver.Handler(reg, nil), logger)
			if err != nil {
				return usageErrorf("learn: --listen: %v", err)
			}
			defer srv.Close()
		}
	}
	sum, err := job.Run(ctx, l)
	if err != nil {
		return fmt.Errorf("learn: %w", err)
	}
	if ctx.Err() != nil {
		return exitError{code: exitInterrupted, err: fmt.Errorf("learner stopped by signal after publishing version %d", sum.LastVersion)}
	}
	return nil
}
