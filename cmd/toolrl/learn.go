package main

import (
	"fmt"
	"log/slog"

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
	// job holds learn's own settings, spec the learner's; both are bound as
	// flags (learner.JobSpec, learner.Spec).
	job  learner.JobSpec
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
	setting.Bind(fs, &f.job)
	setting.Bind(fs, &f.spec)
	alias := fs.VarPF(fs.Lookup("minibatches").Value, "minibatch", "", "alias of --minibatches")
	alias.DefValue = fs.Lookup("minibatches").DefValue
	_ = fs.MarkHidden("minibatch")
	return cmd
}

func runLearn(cmd *cobra.Command, f learnFlags) error {
	if err := setting.ApplyDefaults(&f.job); err != nil {
		return err
	}
	if err := f.job.Check(); err != nil {
		return usageErrorf("learn: %v", err)
	}
	j := &f.job
	in := samefile.Path{Flag: "--in", Path: j.In.Get()}
	if err := samefile.Refuse(samefile.Path{Flag: "--metrics", Path: j.Metrics.Get()}, in); err != nil {
		return usageErrorf("learn: %v", err)
	}
	if err := samefile.Refuse(samefile.Path{Flag: "--store", Path: j.Store.Get()}, in); err != nil {
		return usageErrorf("learn: %v", err)
	}
	opts, err := f.spec.Options()
	if err != nil {
		return usageErrorf("learn: %v", err)
	}
	if j.Temperature.Get() > 0 {
		t := j.Temperature.Get()
		opts.Temperature = &t
	}
	if err := opts.Validate(); err != nil {
		return usageErrorf("learn: %v", err)
	}
	precision, err := train.ParsePrecision(j.Precision.Get())
	if err != nil {
		return usageErrorf("learn: --precision: %v", err)
	}
	rolloutQuant, err := llama.ParseQuantization(j.RolloutQuant.Get())
	if err != nil {
		return usageErrorf("learn: --rollout-quantization: %v", err)
	}
	if j.Redis.Get() != "" {
		if err := stream.ValidateJob(j.Job.Get()); err != nil {
			return usageErrorf("learn: --job: %v", err)
		}
		if _, err := stream.ParseURL(j.Redis.Get(), stream.ConnectOptions{}); err != nil {
			return usageErrorf("learn: --redis: %v", err)
		}
	}
	stderr := cmd.ErrOrStderr()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signalContext(cmd)
	defer stop()

	models, err := learner.LoadModels(j.Model.Get(), f.spec.RefModel.Get(), opts.Loss.KLBeta, precision)
	if err != nil {
		return fmt.Errorf("learn: %w", err)
	}
	base := models.Base
	base.RolloutQuantization = rolloutQuant
	l, err := learner.New(models.Policy, models.Ref, j.Version.Get(), opts)
	if err != nil {
		return usageErrorf("learn: %v", err)
	}
	store, err := policystore.Open(j.Store.Get())
	if err != nil {
		return fmt.Errorf("learn: %w", err)
	}
	defer store.Close()

	job := j.NewJob(store, base, logger, stderr)
	if j.Redis.Get() != "" {
		reg := metricsserver.NewRegistry(build())
		job.Registry = reg
		if j.Listen.Get() != "" {
			srv, err := metricsserver.Start(j.Listen.Get(), metricsserver.Handler(reg, nil), logger)
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
