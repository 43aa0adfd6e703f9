package orchestrator

import (
	"io"
	"log/slog"
	"time"

	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/sink"
)

// RunOptions are the parts of a run that are not the job: where progress
// goes, and overrides for the prompt feed and the sink (distributed workers
// and tests use them).
type RunOptions struct {
	Logger *slog.Logger
	// ProgressOut receives the progress bar or lines (default os.Stderr).
	ProgressOut io.Writer
	// Feed overrides reading job.Prompts.
	Feed prompt.Feed
	// Sink overrides opening job.Out.
	Sink sink.Sink
	// Abort, once closed, abandons in-flight groups at once (the second
	// Ctrl-C). Cancelling Run's ctx only stops taking new prompts and lets
	// in-flight groups finish. nil: never.
	Abort <-chan struct{}
	// Iteration is set on every prompt read from job.Prompts (prompt.Prompt.Iteration):
	// the closed loop runs the same job once per iteration, and each run
	// samples every prompt as a new group, job/prompt@Iteration (0, the
	// default, is a plain rollout: job/prompt). Prompts from Feed carry
	// their own iteration. ≥ 0.
	Iteration int
	// Policy, when set, is polled between groups for a newer policy version
	// than the loaded one (hot reload): the runner stops admitting groups,
	// lets those in flight finish on the old version, verifies and loads the
	// new one and stamps its number on every later trajectory. It also opens
	// the gate of prompts that need a newer version (prompt.Prompt.MinPolicyVersion).
	// nil: the job's model is used for the whole run, and a prompt that needs
	// a newer version than job.PolicyVersion is an error.
	Policy PolicySource
	// PolicyPoll is the least time between two polls of Policy (default
	// 200 ms); a prompt that needs a newer version polls at once.
	PolicyPoll time.Duration
	// Hooks replace the format, tools, call detection or sampling settings
	// for a synthetic workload (benchmarks); the zero value changes nothing.
	Hooks Hooks
	// Live, when set, receives a copy of the summary at every turn of the
	// loop and at the end, for readers on other goroutines (toolrl rollout
	// --listen serves it as Prometheus metrics, NewCollector).
	Live *Live
}
