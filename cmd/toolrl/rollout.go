package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/chat"
	"github.com/toolrl/toolrl/internal/interrupt"
	"github.com/toolrl/toolrl/internal/samefile"
	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/sink"
	"github.com/toolrl/toolrl/stream"
)

func newRolloutCmd() *cobra.Command {
	var (
		jobFile   string
		flags     orchestrator.Job // the flags layer: set only where a flag is given
		overrides []string
		kwargs    string
		iteration int
		dist      distributedFlags
		report    reportFlags
	)
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Run a rollout job: G samples per prompt, tool calls, staged rewards",
		Long: `rollout samples G trajectories per prompt with an ONNX policy, executes the
tool calls the policy writes, scores staged rewards (outcome, format, tool
success, result used, call cost) and writes whole groups to JSONL, Parquet or a
Redis stream. Settings come from a YAML job file (--job-file); flags, then
--set KEY=VALUE for any job-file key, override it, and the model folder's
generation_config.json fills the sampling keys neither gives; the defaults
shown below come last (docs/settings.md lists every key). The summary says
where each sampling value came from. Rerunning the same job skips the groups already written;
a rerun with other settings (seed, group size, sampling, model, tools,
rewards, prompts file...) is refused, naming each one, unless --force-resume
(OUT.settings.json or the job's Redis key records them; --limit, --batch and
--threads are not settings).
Ctrl-C stops taking prompts, finishes the groups in flight, prints the summary
and exits 130; a second Ctrl-C abandons them (nothing partial is written).

--watch follows a training run's policy: between groups it loads each newer
version of a policy store folder (--watch STORE) or of the job's Redis pointer
(--watch redis), verified against its manifest, after the groups in flight
finish on the old one; every trajectory records the version it was sampled
with. --worker --follow keeps a worker waiting for new prompts (the next
iterations) instead of exiting when the job's stream is drained: with --watch
it is the rollout worker of a training run.

--listen ADDR serves Prometheus /metrics (toolrl_rollout_*: groups, tokens,
tool calls by tool and outcome, tool latency, a worker's claims, the policy
version) and /healthz while the run lasts; --summary-json FILE also writes
the end-of-run summary as JSON. Both are listed in docs/rollout.md.`,
		Example: `  # the default policy on the shipped calc prompts (what make run does)
  toolrl rollout --model models/calc --prompts data/calc/prompts.jsonl --limit 64 --group-size 8 --out out/rollout.jsonl

  # a job file, with overrides, into a Redis stream for the advantage service
  toolrl rollout --job-file job.yaml --seed 7 --out redis://127.0.0.1:6379/0

  # a distributed job: enqueue the prompts once, then start workers anywhere
  toolrl rollout --prompts data/calc/prompts.jsonl --redis redis://10.0.0.5:6379/0 --job calc1
  toolrl rollout --model models/calc --redis redis://10.0.0.5:6379/0 --job calc1 --worker

  # the worker of a training run: follows the job's prompts and policy until Ctrl-C
  toolrl rollout --model models/calc --redis redis://10.0.0.5:6379/0 --job calc1 --worker --follow --watch redis --listen 127.0.0.1:9102

  # a file rollout that picks up each version a learner publishes into a store
  toolrl rollout --model models/calc --prompts data/calc/rl.jsonl --watch /shared/store --out out/rl.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			job := orchestrator.Job{}
			if jobFile != "" {
				var err error
				if job, err = orchestrator.LoadJob(jobFile); err != nil {
					return usageError{err}
				}
			}
			set := cmd.Flags().Changed
			if set("claim-idle") && dist.claimIdle <= 0 {
				return usageErrorf("--claim-idle %v: want a duration > 0", dist.claimIdle)
			}
			setting.Overlay(&job, &flags)
			if err := setting.SetAll(&job, overrides, setting.Override); err != nil {
				return usageErrorf("--set %v", err)
			}
			if set("chat-template-kwargs") {
				kw, err := chat.ParseKwargs(kwargs)
				if err != nil {
					return usageErrorf("--chat-template-kwargs: %w", err)
				}
				job.ChatTemplateKwargs = kw
			}
			if err := checkRolloutModes(set, iteration, dist, report); err != nil {
				return err
			}
			if dist.url != "" {
				return runDistributed(cmd, job, dist, iteration, report)
			}
			if err := job.Normalize(); err != nil {
				if jobFile != "" && !strings.HasPrefix(err.Error(), "--") {
					return usageErrorf("job file %s: %w", jobFile, err)
				}
				return usageError{err}
			}
			if err := checkRolloutOutput(job, jobFile); err != nil {
				return err
			}
			policy, err := orchestrator.OpenPolicySource(dist.watch, nil, "")
			if err != nil {
				return usageError{err}
			}
			return runRollout(cmd, job, nil, iteration, policy, report)
		},
	}
	f := cmd.Flags()
	f.StringVar(&jobFile, "job-file", "", "YAML job file (flags override its fields)")
	setting.Bind(f, &flags)
	f.StringArrayVar(&overrides, "set", nil, "set any job-file key, KEY=VALUE (e.g. limits.max_tool_calls=0); repeatable, applied after the other flags (docs/settings.md)")
	f.StringVar(&kwargs, "chat-template-kwargs", "", `chat format: JSON object of extra chat-template variables, e.g. '{"enable_thinking": false}' (replaces the job file's chat_template_kwargs)`)
	f.IntVar(&iteration, "iteration", 0, "closed-loop iteration: every prompt is a new group JOB/prompt@N with its own seeds (0 = JOB/prompt)")
	f.StringVar(&dist.url, "redis", "", "distributed job: enqueue the prompts into this Redis (with --job), or claim them with --worker")
	f.BoolVar(&dist.worker, "worker", false, "run as a distributed worker: claim prompts from --redis until the job's prompts are done (with --follow: until Ctrl-C)")
	f.DurationVar(&dist.claimIdle, "claim-idle", 60*time.Second, "reclaim a silent worker's prompts after this long")
	f.BoolVar(&dist.follow, "follow", false, "with --worker: keep waiting for new prompts when the stream is drained, until Ctrl-C")
	f.StringVar(&dist.watch, "watch", "", "hot-reload newer policy versions from a policy store folder, or from the job's Redis pointer (redis)")
	f.Int64Var(&dist.minPolicyVersion, "min-policy-version", 0, "when enqueueing: the least policy version the prompts may be sampled with (workers with --watch wait for it)")
	f.StringVar(&report.listen, "listen", "", "serve Prometheus /metrics and /healthz on this address while the rollout runs, e.g. 127.0.0.1:9102 (empty: none)")
	f.StringVar(&report.summaryJSON, "summary-json", "", "also write the end-of-run summary as JSON to this file (docs/rollout.md)")
	return cmd
}

// checkRolloutModes refuses flags that do not belong to the run they ask
// for: enqueueing (--redis), a distributed worker (--redis --worker) or a
// file rollout, the first that applies, naming the flags. set reports
// whether a flag was given.
func checkRolloutModes(set func(string) bool, iteration int, dist distributedFlags, report reportFlags) error {
	distributed, enqueue := dist.url != "", dist.url != "" && !dist.worker
	for _, c := range []struct {
		refused bool
		msg     string
	}{
		{iteration < 0, fmt.Sprintf("--iteration %d: want ≥ 0", iteration)},
		{dist.follow && !dist.worker, "--follow is for workers (--worker): it keeps one waiting for new prompts"},
		{dist.minPolicyVersion < 0, fmt.Sprintf("--min-policy-version %d: want ≥ 0", dist.minPolicyVersion)},
		{distributed && dist.worker && set("iteration"), "--iteration is for enqueueing: a worker samples each prompt in the iteration its entry carries"},
		{distributed && dist.worker && set("min-policy-version"), "--min-policy-version is for enqueueing: a worker takes each entry's minimum from the entry"},
		{enqueue && dist.watch != "", "--watch is for sampling; with --redis and without --worker the prompts are only enqueued"},
		{enqueue && (report.listen != "" || report.summaryJSON != ""), "--listen and --summary-json are for sampling; with --redis and without --worker the prompts are only enqueued"},
		{!distributed && dist.worker, "--worker needs --redis URL and --job J"},
		{!distributed && dist.watch == orchestrator.WatchRedis, "--watch redis needs --redis URL, --job J and --worker (it follows the job's policy pointer)"},
		{!distributed && set("min-policy-version"), "--min-policy-version is for enqueueing into --redis"},
	} {
		if c.refused {
			return usageErrorf("%s", c.msg)
		}
	}
	return nil
}

// checkRolloutOutput refuses a file output that is one of the job's input
// files (the same file, not only the same name): writing it would destroy
// the prompts, tools registry or job file.
func checkRolloutOutput(job orchestrator.Job, jobFile string) error {
	if strings.Contains(job.Out.Get(), "://") {
		return nil
	}
	return usageErrorIf(samefile.Refuse(samefile.Path{Flag: "--out", Path: job.Out.Get()},
		samefile.Path{Flag: "--prompts", Path: job.Prompts.Get()},
		samefile.Path{Flag: "--tools", Path: job.Tools.Get()},
		samefile.Path{Flag: "--job-file", Path: jobFile}))
}

// usageErrorIf marks a non-nil err as a usage error.
func usageErrorIf(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

type distributedFlags struct {
	url              string
	worker           bool
	claimIdle        time.Duration
	follow           bool
	watch            string
	minPolicyVersion int64
}

// reportFlags say where a sampling run reports: /metrics on listen, the
// summary as JSON in summaryJSON.
type reportFlags struct {
	listen      string
	summaryJSON string
}

// runDistributed enqueues the job's prompts, or runs a worker on them.
func runDistributed(cmd *cobra.Command, job orchestrator.Job, dist distributedFlags, iteration int, report reportFlags) error {
	if !cmd.Flags().Changed("job") && job.ID.Get() == "" {
		return usageErrorf("--redis needs --job J: the job names the streams workers share")
	}
	ctx := cmd.Context()
	client, err := stream.Connect(ctx, dist.url, stream.ConnectOptions{})
	if err != nil {
		return fmt.Errorf("redis %s: %w", stream.Redact(dist.url), err)
	}
	defer client.Close()
	if !dist.worker {
		if job.Prompts.Get() == "" {
			return usageErrorf("enqueueing needs --prompts FILE (or start workers with --worker)")
		}
		set, err := prompt.ReadFile(job.Prompts.Get(), job.Limit.Get(), job.SkipInvalid.Get())
		if err != nil {
			return usageError{err}
		}
		for i := range set.Prompts {
			set.Prompts[i].Iteration = iteration
			set.Prompts[i].MinPolicyVersion = dist.minPolicyVersion
		}
		n, err := prompt.Enqueue(ctx, client, job.ID.Get(), set.Prompts)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "enqueued %d prompts (%d already queued, %d malformed lines skipped) into %s\n",
			n, len(set.Prompts)-n, len(set.Skipped), stream.JobKeys(job.ID.Get()).Prompts)
		return nil
	}
	if job.Out.Get() == "" {
		job.Out.Set(dist.url, setting.Default)
	}
	if job.Prompts.Get() == "" {
		job.Prompts.Set("redis", setting.Default) // the feed replaces the file
	}
	if err := job.Normalize(); err != nil {
		return usageError{err}
	}
	if err := checkRolloutOutput(job, ""); err != nil {
		return err
	}
	policy, err := orchestrator.OpenPolicySource(dist.watch, client, job.ID.Get())
	if err != nil {
		return usageError{err}
	}
	// The feed rides out a Redis restart as long as the sink does (retry=).
	retry, err := stream.WriteRetry(dist.url)
	if err != nil {
		return usageError{err}
	}
	feed, err := prompt.NewRedisFeed(ctx, client, prompt.RedisFeedOptions{Job: job.ID.Get(), ClaimIdle: dist.claimIdle, Follow: dist.follow,
		Retry: stream.Retry{For: retry}})
	if err != nil {
		return err
	}
	return runRollout(cmd, job, feed, 0, policy, report)
}

// runRollout runs the job with signal handling: the first SIGINT/SIGTERM
// stops taking prompts and lets in-flight groups finish; a second abandons
// them. Either way the summary is printed and the exit code is 130. iteration
// is the prompts file's (RunOptions.Iteration); a feed's prompts carry their
// own. policy, when not nil, is the source of hot reloads (--watch). report
// serves /metrics while the run lasts and writes the JSON summary.
func runRollout(cmd *cobra.Command, job orchestrator.Job, feed prompt.Feed, iteration int, policy orchestrator.PolicySource, report reportFlags) error {
	if report.summaryJSON != "" {
		paths := []samefile.Path{{Flag: "--summary-json", Path: report.summaryJSON},
			{Flag: "--prompts", Path: job.Prompts.Get()}, {Flag: "--tools", Path: job.Tools.Get()}}
		if !strings.Contains(job.Out.Get(), "://") {
			paths = append(paths, samefile.Path{Flag: "--out", Path: job.Out.Get()})
		}
		if err := samefile.Refuse(paths[0], paths[1:]...); err != nil {
			return usageError{err}
		}
	}
	// The first signal finishes the groups in flight; the second abandons
	// them (orchestrator.RunOptions.Abort).
	watch := interrupt.Start(cmd.Context(), func() {
		fmt.Fprintln(cmd.ErrOrStderr(), "toolrl: stopping: finishing the groups in flight (Ctrl-C again to abandon them)")
	}, func() {})
	defer watch.Stop()
	ctx, abort := watch.Context(), watch.Abandoned()
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	var live *orchestrator.Live
	if report.listen != "" {
		l, srv, err := orchestrator.ServeLive(report.listen, build(), logger)
		if err != nil {
			return usageErrorf("--listen: %v", err)
		}
		defer srv.Close()
		live = l
	}
	summary, err := orchestrator.Run(ctx, job, orchestrator.RunOptions{Logger: logger, ProgressOut: cmd.ErrOrStderr(), Abort: abort, Feed: feed, Iteration: iteration, Policy: policy,
		Live: live})
	if summary != nil {
		summary.Write(cmd.OutOrStdout())
		fmt.Fprintf(cmd.OutOrStdout(), "  output         %s\n", sink.DisplayOut(job.Out.Get()))
	}
	if report.summaryJSON != "" {
		if werr := summary.WriteJSONFile(report.summaryJSON, job.ID.Get(), job.Out.Get(), err); werr != nil {
			werr = fmt.Errorf("--summary-json %s: %w", report.summaryJSON, werr)
			if err == nil {
				return werr
			}
			logger.Error("rollout: could not write the JSON summary", "err", werr)
		}
	}
	var mismatch *sink.SettingsMismatchError
	if errors.As(err, &mismatch) {
		return usageError{err} // the user's to fix: --force-resume or another output
	}
	if ctx.Err() != nil {
		if err == nil {
			err = errors.New("interrupted")
		}
		return exitError{code: exitInterrupted, err: err}
	}
	return err
}
