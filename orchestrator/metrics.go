package orchestrator

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/tools"
)

// rolloutDesc makes the description of a toolrl_rollout_* series.
func rolloutDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName("toolrl", "rollout", name), help, labels, nil)
}

// collector turns a Live's snapshot into Prometheus series at scrape time
// (docs/rollout.md lists them).
type collector struct {
	live *Live

	promptsRead, promptsSkipped, promptsRefused                 *prometheus.Desc
	groupsWritten, groupsResumed, groupsDuplicate, groupsSignal *prometheus.Desc
	trajectories, trajectoriesWithCall, correct                 *prometheus.Desc
	sampledTokens, injectedTokens, finish                       *prometheus.Desc
	rewardMean, accuracy                                        *prometheus.Desc
	toolCalls, toolSeconds, toolsInFlight, toolOverruns         *prometheus.Desc
	toolPanics                                                  *prometheus.Desc
	policyVersion, reloads, reloadSeconds, versionsRefused      *prometheus.Desc
	claimed, reclaimed, done, redone, repeats, deadLettered     *prometheus.Desc
	stepSeconds, running, queued                                *prometheus.Desc
}

// NewCollector returns a Prometheus collector of a rollout's figures,
// read from live at each scrape (namespace toolrl_rollout): prompts, groups,
// trajectories, tokens, finish reasons, reward mean and accuracy, tool calls
// by tool and outcome, tool execution times, the engine's step times and
// batch occupancy, the policy version and reloads (--watch) and, for a
// distributed worker, its feed's counts (docs/metrics.md lists them). Counters come
// from the run's Summary, so they equal its printed figures. Series appear
// once the run has opened its model and tools; the worker series only for a
// worker. No label holds a URL or other configuration.
func NewCollector(live *Live) prometheus.Collector {
	return &collector{
		live:                 live,
		promptsRead:          rolloutDesc("prompts_read_total", "Prompts read: the prompts file's, or those the feed handed out (a worker's claims)."),
		promptsSkipped:       rolloutDesc("prompts_skipped_total", "Malformed prompt lines skipped (--skip-invalid)."),
		promptsRefused:       rolloutDesc("prompts_refused_total", "Prompts refused alone: their tokens leave no room under the model's context."),
		groupsWritten:        rolloutDesc("groups_written_total", "Groups written to the output."),
		groupsResumed:        rolloutDesc("groups_resumed_total", "Groups already in the output when their prompt came (resume): not redone."),
		groupsDuplicate:      rolloutDesc("groups_duplicate_total", "Groups another worker had already written, or fed twice in this run: not written again."),
		groupsSignal:         rolloutDesc("groups_with_signal_total", "Written groups whose rewards are not all equal."),
		trajectories:         rolloutDesc("trajectories_total", "Trajectories written."),
		trajectoriesWithCall: rolloutDesc("trajectories_with_call_total", "Written trajectories with at least one tool call."),
		correct:              rolloutDesc("trajectories_correct_total", "Written trajectories whose final answer is right."),
		sampledTokens:        rolloutDesc("sampled_tokens_total", "Policy tokens in written trajectories (loss mask 1)."),
		injectedTokens:       rolloutDesc("injected_tokens_total", "Environment tokens (tool results, chat markup) in written trajectories (loss mask 0)."),
		finish:               rolloutDesc("finish_total", "Written trajectories by finish reason.", "reason"),
		rewardMean:           rolloutDesc("reward_mean", "Mean total reward of the written trajectories (0 before the first)."),
		accuracy:             rolloutDesc("accuracy_ratio", "Share of the written trajectories whose final answer is right, 0 to 1 (0 before the first)."),
		toolCalls: rolloutDesc("tool_calls_total",
			`Tool calls in written trajectories by tool (a registry name, or "unknown") and outcome ("ok", or the error class: timeout, tool_error, bad_json, over_cap, not_executed, ...).`,
			"tool", "outcome"),
		toolSeconds:     rolloutDesc("tool_call_seconds", "Execution time of the tool calls that ran, by tool (from holding the slots to the result; timeouts included).", "tool"),
		toolsInFlight:   rolloutDesc("tool_calls_in_flight", "Tool executions running now."),
		toolOverruns:    rolloutDesc("tool_overruns_total", "Tools that returned long after their deadline (they held their slots until then)."),
		toolPanics:      rolloutDesc("tool_panics_total", "Tool calls that panicked (recovered into class panic)."),
		policyVersion:   rolloutDesc("policy_version", "The policy version the run samples with now."),
		reloads:         rolloutDesc("policy_reloads_total", "Policy versions loaded during the run (--watch)."),
		reloadSeconds:   rolloutDesc("policy_reload_seconds_total", "Time spent in hot reloads: manifest check, verify, load and engine."),
		versionsRefused: rolloutDesc("policy_versions_refused_total", "Policy versions refused by a hot reload (the log names the file)."),
		claimed:         rolloutDesc("worker_claimed_total", "Prompt entries delivered to this worker: read new, or reclaimed."),
		reclaimed:       rolloutDesc("worker_reclaimed_total", "Prompt entries reclaimed from a worker silent past --claim-idle."),
		done:            rolloutDesc("worker_done_total", "Prompt entries acknowledged once their group was written (or found written)."),
		redone:          rolloutDesc("worker_redone_total", "Prompt entries whose group was already written when they came: acknowledged unsampled."),
		repeats:         rolloutDesc("worker_repeats_total", "Prompt entries of a prompt already in flight here: acknowledged with the first."),
		deadLettered: rolloutDesc("worker_dead_lettered_total",
			"Prompt entries moved to the job's dead-letter stream, by reason: refused (longer than the context), corrupt, over_delivered.", "reason"),
		stepSeconds: rolloutDesc("decode_step_seconds",
			"Wall time of one engine step that ran the model: prefill of the sequences admitted, one batched decode of every running sequence, sampling."),
		running: rolloutDesc("sequences_running", "Sequences in the engine's decode batch."),
		queued:  rolloutDesc("sequences_queued", "Sequences waiting for a slot in the engine's decode batch."),
	}
}

// Describe sends every series' description.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.promptsRead, c.promptsSkipped, c.promptsRefused,
		c.groupsWritten, c.groupsResumed, c.groupsDuplicate, c.groupsSignal,
		c.trajectories, c.trajectoriesWithCall, c.correct,
		c.sampledTokens, c.injectedTokens, c.finish,
		c.rewardMean, c.accuracy,
		c.toolCalls, c.toolSeconds, c.toolsInFlight, c.toolOverruns, c.toolPanics,
		c.policyVersion, c.reloads, c.reloadSeconds, c.versionsRefused,
		c.claimed, c.reclaimed, c.done, c.redone, c.repeats, c.deadLettered,
		c.stepSeconds, c.running, c.queued,
	} {
		ch <- d
	}
}

// Collect reads the Live snapshot and sends its series.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s, st, eng, ok := c.live.snapshot()
	if !ok {
		return
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(c.promptsRead, float64(s.PromptsTotal))
	counter(c.promptsSkipped, float64(s.PromptsSkipped))
	counter(c.promptsRefused, float64(s.PromptsRefused))
	counter(c.groupsWritten, float64(s.GroupsWritten))
	counter(c.groupsResumed, float64(s.GroupsResumed))
	counter(c.groupsDuplicate, float64(s.GroupsDuplicate))
	counter(c.groupsSignal, float64(s.GroupsWithSignal))
	counter(c.trajectories, float64(s.Trajectories))
	counter(c.trajectoriesWithCall, float64(s.TrajectoriesWithCall))
	counter(c.correct, float64(s.Correct))
	counter(c.sampledTokens, float64(s.SampledTokens))
	counter(c.injectedTokens, float64(s.InjectedTokens))
	for reason, n := range s.Finish {
		counter(c.finish, float64(n), string(reason))
	}
	mean, acc := 0.0, 0.0
	if s.Trajectories > 0 {
		mean = s.RewardSum / float64(s.Trajectories)
		acc = float64(s.Correct) / float64(s.Trajectories)
	}
	gauge(c.rewardMean, mean)
	gauge(c.accuracy, acc)
	for tool, byOutcome := range s.ToolCalls {
		for outcome, n := range byOutcome {
			counter(c.toolCalls, float64(n), tool, outcome)
		}
	}
	bounds := tools.LatencyBuckets()
	for _, tool := range slices.Sorted(maps.Keys(st.Latency)) {
		l := st.Latency[tool]
		buckets := make(map[float64]uint64, len(bounds))
		for i, b := range bounds {
			buckets[b] = l.Buckets[i]
		}
		ch <- prometheus.MustNewConstHistogram(c.toolSeconds, l.Count, l.Seconds, buckets, tool)
	}
	gauge(c.toolsInFlight, float64(st.InFlight))
	counter(c.toolOverruns, float64(st.Overruns))
	counter(c.toolPanics, float64(st.Panics))
	steps, stepBounds := eng.Steps.Cumulative(), actor.StepLatencyBuckets()
	stepBuckets := make(map[float64]uint64, len(stepBounds))
	for i, b := range stepBounds {
		stepBuckets[b] = steps[i]
	}
	ch <- prometheus.MustNewConstHistogram(c.stepSeconds, eng.Steps.Count, eng.Steps.Sum.Seconds(), stepBuckets)
	gauge(c.running, float64(eng.Running))
	gauge(c.queued, float64(eng.Queued))
	gauge(c.policyVersion, float64(s.PolicyVersion))
	counter(c.reloads, float64(s.Reloads))
	counter(c.reloadSeconds, s.ReloadTime.Seconds())
	counter(c.versionsRefused, float64(len(s.VersionsRefused)))
	if w := s.Worker; w != nil {
		counter(c.claimed, float64(w.Claimed))
		counter(c.reclaimed, float64(w.Reclaimed))
		counter(c.done, float64(w.Done))
		counter(c.redone, float64(w.Redone))
		counter(c.repeats, float64(w.Repeats))
		counter(c.deadLettered, float64(w.Refused), "refused")
		counter(c.deadLettered, float64(w.Corrupt), "corrupt")
		counter(c.deadLettered, float64(w.OverDelivered), "over_delivered")
	}
}
