package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/advantage/offline"
	"github.com/toolrl/toolrl/advantage/serve"
	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/bytesize"
	"github.com/toolrl/toolrl/internal/samefile"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/stream"
)

// advantageMathFlags are the flags that choose the advantage math and its
// staleness check, shared by the offline command and the service:
// advantage.Spec's and StalenessSpec's, and offline the trainer's current
// policy version.
type advantageMathFlags struct {
	spec                 advantage.Spec
	staleness            advantage.StalenessSpec
	currentPolicyVersion int64
}

func (f *advantageMathFlags) register(fs *pflag.FlagSet, offline bool) {
	setting.Bind(fs, &f.spec)
	setting.Bind(fs, &f.staleness)
	if offline {
		fs.Int64Var(&f.currentPolicyVersion, "policy-version", 0, "the trainer's current policy version, for --max-staleness")
	}
}

func (f *advantageMathFlags) config(verb string) (advantage.Config, error) {
	if f.currentPolicyVersion < 0 {
		return advantage.Config{}, usageErrorf("%s: --policy-version %d: want ≥ 0", verb, f.currentPolicyVersion)
	}
	cfg, err := f.spec.Config(f.staleness)
	if err != nil {
		return cfg, usageErrorf("%s: %v", verb, err)
	}
	cfg.CurrentPolicyVersion = f.currentPolicyVersion
	return cfg, nil
}

func newAdvantageCmd() *cobra.Command {
	var mathFlags advantageMathFlags
	var in, out, memLimit, spillDir, refModel string
	var allowIncomplete bool
	var refBatch int
	var refTemperature float64
	var rewardParts []string
	cmd := &cobra.Command{
		Use:   "advantage --in FILE --out FILE",
		Short: "Compute GRPO advantages offline or as a Redis service",
		Long: `advantage computes per-token advantages (and KL terms) for groups of
trajectories, and writes one advantage record per trajectory.

Offline, it reads --in (.jsonl, .jsonl.gz or .parquet; trajectories, or JSONL
groups) and writes --out (same formats). Members of a group need not be
contiguous: partial groups are held in memory up to --memory-limit, then
spilled to temporary files. With --ref-model DIR, trajectories without
ref_log_prob are scored by that model (batched) so that --kl has a reference,
each at the temperature it records (1 when greedy); --ref-temperature is the
one for trajectories that record none (v1 data).

"toolrl advantage serve" runs the same math as a Redis service. The formulas
and flags are documented in docs/advantage.md.`,
		Example: `  toolrl advantage --in out/calc.jsonl --out out/adv.parquet
  toolrl advantage --in groups.jsonl.gz --out adv.jsonl --mode hybrid --process-weight 0.5 --kl k3 --kl-coef 0.01
  toolrl advantage serve --redis redis://127.0.0.1:6379 --job calc-demo --listen :9464`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if in == "" || out == "" {
				return usageErrorf("advantage: --in and --out are required (or run \"toolrl advantage serve\")")
			}
			if _, err := export.FormatOf(out); err != nil {
				return usageErrorf("advantage: --out: %v", err)
			}
			if _, err := export.FormatOf(in); err != nil {
				return usageErrorf("advantage: --in: %v", err)
			}
			if err := samefile.Refuse(samefile.Path{Flag: "--out", Path: out}, samefile.Path{Flag: "--in", Path: in}); err != nil {
				return usageErrorf("advantage: %v", err)
			}
			if refBatch < 1 {
				return usageErrorf("advantage: --ref-batch %d, want at least 1", refBatch)
			}
			cfg, err := mathFlags.config("advantage")
			if err != nil {
				return err
			}
			limit, err := bytesize.Parse(memLimit)
			if err != nil {
				return usageErrorf("advantage: --memory-limit %q: %v", memLimit, err)
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			opts := offline.FileOptions{Options: offline.Options{
				Config: cfg, MemoryLimit: limit, SpillDir: spillDir, AllowIncomplete: allowIncomplete, RefBatch: refBatch,
				Logger: newAdvantageLogger(cmd),
			}, RewardParts: rewardParts}
			if refModel != "" {
				scorer, err := openRefScorer(ctx, "advantage", refModel, refTemperature)
				if err != nil {
					return err
				}
				defer scorer.Close()
				opts.RefScorer, opts.RefTemperature = scorer, refTemperature
			}
			st, err := offline.RunFiles(ctx, in, out, opts)
			if ctx.Err() != nil {
				return exitError{code: exitInterrupted, err: fmt.Errorf("advantage interrupted; %s not written", out)}
			}
			if err != nil {
				return fmt.Errorf("advantage: %w", err)
			}
			st.Write(cmd.OutOrStdout())
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&in, "in", "", "trajectories to read: .jsonl, .jsonl.gz or .parquet")
	fs.StringVar(&out, "out", "", "advantage records to write: .jsonl, .jsonl.gz or .parquet")
	fs.StringVar(&memLimit, "memory-limit", "256MiB", "partial groups held in memory before spilling to disk (B, KiB, MiB, GiB)")
	fs.StringVar(&spillDir, "spill-dir", "", "directory for spill files (default: the system temp dir)")
	fs.BoolVar(&allowIncomplete, "allow-incomplete", false, "compute groups missing members at the end of the input over the members present")
	fs.StringVar(&refModel, "ref-model", "", "model folder that scores trajectories lacking ref_log_prob (the actor's reference scorer)")
	fs.IntVar(&refBatch, "ref-batch", 16, "sequences per reference scoring batch")
	fs.Float64Var(&refTemperature, "ref-temperature", 1, refTemperatureUsage)
	fs.StringSliceVar(&rewardParts, "reward-parts", nil, "reward parts that get a Parquet column even if the first row group lacks them")
	mathFlags.register(fs, true)
	cmd.AddCommand(newAdvantageServeCmd())
	return cmd
}

const refTemperatureUsage = "with --ref-model, the temperature of trajectories that record none (v1 data); the others are scored at their own"

// openRefScorer loads --ref-model, the reference policy: it scores each
// trajectory at the temperature the trajectory records, so that
// logp − logp_ref compares like with like (the actor records
// log-softmax(logits/T)), and v1 trajectories at --ref-temperature.
func openRefScorer(ctx context.Context, verb, dir string, temperature float64) (*actor.Policy, error) {
	if !(temperature > 0) || math.IsInf(temperature, 0) {
		return nil, usageErrorf("%s: --ref-temperature %v, want a finite value > 0", verb, temperature)
	}
	policy, err := actor.Load(ctx, actor.LoadOptions{Dir: dir})
	if err != nil {
		return nil, fmt.Errorf("%s: --ref-model: %w", verb, err)
	}
	return policy, nil
}

func newAdvantageServeCmd() *cobra.Command {
	var mathFlags advantageMathFlags
	var url, job, refModel string
	var refTemperature float64
	opts := serve.RunOptions{}
	cmd := &cobra.Command{
		Use:   "serve --redis URL --job JOB",
		Short: "Consume a job's groups stream and write advantage records to Redis",
		Long: `serve reads toolrl:{JOB}:groups with consumer group "advantage" and, for
each group, writes one entry per trajectory to toolrl:{JOB}:advantages, marks
the group done and acknowledges it in one atomic step (an optimistic
MULTI/EXEC transaction, gated by WATCH on a per-group lock key): a group is
output exactly once even when it is delivered twice or the service is killed. Entries that do not
decode or compute go to toolrl:{JOB}:dead with the reason. Groups left pending
by a dead consumer are claimed after --claim-idle.

With --ref-model DIR, trajectories that arrive without ref_log_prob are
scored by that model (the actor's reference scorer, --ref-batch sequences per
call over each read batch, each trajectory at its recorded sampling
temperature, --ref-temperature for v1 data that records none)
before the advantages, so that --kl has a reference; a trajectory the model cannot score (a token outside its
vocabulary) sends its group to the dead letters with the reason.

Staleness is checked against the integer in toolrl:{JOB}:policy_version (set
by the trainer; no check while it is missing).

Backpressure: while the slowest trainer consumer group of the advantages
stream has --max-output-backlog records pending or undelivered, the workers
stop reading groups, holding nothing; the groups stream then fills up to the
rollouts' own limit and they wait too. While the stream has no consumer
group nothing is counted (XRANGE readers such as toolrl export are not
tracked); destroy an abandoned trainer group (XGROUP DESTROY) or it holds the
service. --trim-consumed deletes what every consumer group has
acknowledged from both streams, so that Redis memory stays bounded over a
long job.

The URL is redis://[user:password@]host:port[/db] or rediss:// for TLS;
several comma-separated hosts or ?cluster=true make a cluster client,
?sentinel=MASTER a Sentinel client (docs/redis.md). The password may come
from $TOOLRL_REDIS_PASSWORD instead of the URL; it is never logged.

/metrics (Prometheus) and /healthz are served on --listen. SIGINT or SIGTERM
stops reading, commits the batches in flight and exits with status 130.`,
		Example: `  toolrl advantage serve --redis redis://127.0.0.1:6379 --job calc-demo
  TOOLRL_REDIS_PASSWORD=... toolrl advantage serve --redis rediss://a:6379,b:6379,c:6379 --job exp7 --workers 4 --mode hybrid --kl k3
  toolrl advantage serve --redis redis://127.0.0.1:6379 --job calc-demo --ref-model models/calc --kl k3 --kl-coef 0.01`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if url == "" || job == "" {
				return usageErrorf("advantage serve: --redis and --job are required")
			}
			if err := stream.ValidateJob(job); err != nil {
				return usageErrorf("advantage serve: --job: %v", err)
			}
			cfg, err := mathFlags.config("advantage serve")
			if err != nil {
				return err
			}
			if _, err := stream.ParseURL(url, stream.ConnectOptions{}); err != nil {
				return usageErrorf("advantage serve: --redis: %v", err)
			}
			if opts.RefBatch < 1 {
				return usageErrorf("advantage serve: --ref-batch %d, want at least 1", opts.RefBatch)
			}
			switch {
			case opts.Workers < 1:
				return usageErrorf("advantage serve: --workers %d, want at least 1", opts.Workers)
			case opts.Batch < 1:
				return usageErrorf("advantage serve: --batch %d, want at least 1", opts.Batch)
			case opts.ClaimIdle <= 0:
				return usageErrorf("advantage serve: --claim-idle %v, want a duration > 0", opts.ClaimIdle)
			case opts.MaxDeliveries < 1:
				return usageErrorf("advantage serve: --max-deliveries %d, want at least 1", opts.MaxDeliveries)
			}
			opts.Job, opts.Config, opts.Logger, opts.Build = job, cfg, newAdvantageLogger(cmd), build()
			ctx, stop := signalContext(cmd)
			defer stop()
			if refModel != "" {
				scorer, err := openRefScorer(ctx, "advantage serve", refModel, refTemperature)
				if err != nil {
					return err
				}
				defer scorer.Close()
				opts.RefScorer, opts.RefTemperature = scorer, refTemperature
			}
			err = serve.Run(ctx, url, opts)
			var refused *serve.OptionsError
			switch {
			case errors.As(err, &refused) && refused.Listen:
				return usageErrorf("advantage serve: --listen: %v", err)
			case errors.As(err, &refused):
				return usageErrorf("advantage serve: %v", err)
			case err != nil:
				return fmt.Errorf("advantage serve: %w", err)
			case ctx.Err() != nil:
				return exitError{code: exitInterrupted, err: errors.New("advantage service stopped by signal after committing its batches")}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&url, "redis", "", "Redis URL (redis:// or rediss://; see docs/redis.md)")
	fs.StringVar(&job, "job", "", "job name: the service uses the keys toolrl:{JOB}:*")
	fs.StringVar(&opts.Listen, "listen", "127.0.0.1:9464", "address for /metrics and /healthz (empty: none)")
	fs.IntVar(&opts.Workers, "workers", 2, "concurrent consumers")
	fs.Int64Var(&opts.Batch, "batch", 32, "groups per read and per atomic commit")
	fs.DurationVar(&opts.ClaimIdle, "claim-idle", 30*time.Second, "claim groups pending this long with another consumer")
	fs.Int64Var(&opts.MaxDeliveries, "max-deliveries", 5, "dead-letter a group delivered more often than this")
	fs.StringVar(&opts.ConsumerName, "consumer", "", "consumer name prefix (default hostname-pid)")
	fs.StringVar(&refModel, "ref-model", "", "model folder that scores trajectories lacking ref_log_prob (the actor's reference scorer)")
	fs.IntVar(&opts.RefBatch, "ref-batch", 16, "sequences per reference scoring call")
	fs.Float64Var(&refTemperature, "ref-temperature", 1, refTemperatureUsage)
	fs.Int64Var(&opts.MaxOutputBacklog, "max-output-backlog", 80000,
		"stop reading groups while the slowest trainer consumer group has this many unconsumed records in the advantages stream (0: 80000; negative: never)")
	fs.StringVar(&opts.RecordFormat, "record-format", serve.RecordFormatJSON,
		"how records are written to the advantages stream: json, or binary (the per-token arrays as little-endian fields of their own, docs/redis.md)")
	fs.BoolVar(&opts.TrimConsumed, "trim-consumed", false,
		"delete entries of the groups and advantages streams once every consumer group has acknowledged them (bounded Redis memory; XRANGE readers such as toolrl export no longer see them)")
	mathFlags.register(fs, false)
	return cmd
}

// newAdvantageLogger is the advantage verbs' log: text on stderr, from Info.
func newAdvantageLogger(cmd *cobra.Command) *slog.Logger {
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}
