package serve

import "github.com/prometheus/client_golang/prometheus"

// metrics are the service's Prometheus series (namespace toolrl_advantage).
type metrics struct {
	groups        prometheus.Counter
	records       prometheus.Counter
	duplicates    prometheus.Counter
	deadLetters   prometheus.Counter
	staleDropped  prometheus.Counter
	staleFlagged  prometheus.Counter
	zeroVariance  prometheus.Counter
	zeroDropped   prometheus.Counter
	groupsPerSec  prometheus.Gauge
	lag           prometheus.Gauge
	pending       prometheus.Gauge
	policyVersion prometheus.Gauge
	batchSeconds  prometheus.Histogram
	redisErrors   prometheus.Counter

	outputBacklog       prometheus.Gauge
	backpressureSeconds prometheus.Counter
	trimmed             prometheus.Counter
	refScored           prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "toolrl", Subsystem: "advantage", Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "toolrl", Subsystem: "advantage", Name: name, Help: help})
	}
	m := &metrics{
		groups:        counter("groups_total", "Groups consumed and committed (written, duplicate or dropped)."),
		records:       counter("records_total", "Advantage records written to the advantages stream."),
		duplicates:    counter("duplicate_groups_total", "Redelivered groups that were already done (acknowledged, nothing written)."),
		deadLetters:   counter("dead_letters_total", "Entries moved to the dead-letter stream."),
		staleDropped:  counter("stale_dropped_total", "Groups dropped for lagging the policy version by more than max_staleness."),
		staleFlagged:  counter("stale_flagged_total", "Stale groups kept with stale=true."),
		zeroVariance:  counter("zero_variance_groups_total", "Groups whose rewards were all equal."),
		zeroDropped:   counter("zero_variance_dropped_total", "Zero-variance groups dropped."),
		groupsPerSec:  gauge("groups_per_second", "Groups committed per second over the last metrics interval."),
		lag:           gauge("lag", "Entries of the groups stream not yet delivered to the consumer group."),
		pending:       gauge("pending", "Entries delivered to the consumer group and not yet acknowledged."),
		policyVersion: gauge("policy_version", "The trainer's policy version last read from Redis."),
		batchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "toolrl", Subsystem: "advantage", Name: "batch_seconds",
			Help: "Time to decode, compute, encode and commit one batch.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		redisErrors: counter("redis_errors_total", "Redis calls that failed and were retried."),
		outputBacklog: gauge("output_backlog",
			"Unconsumed records of the advantages stream (slowest trainer group; all records while there is none)."),
		backpressureSeconds: counter("backpressure_seconds_total",
			"Time workers spent waiting for trainers because the advantages stream was at max_output_backlog."),
		trimmed:   counter("trimmed_entries_total", "Entries deleted from the groups and advantages streams after every consumer group acknowledged them."),
		refScored: counter("ref_scored_total", "Trajectories whose ref_logprobs were computed by the reference model (--ref-model)."),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.groups, m.records, m.duplicates, m.deadLetters, m.staleDropped, m.staleFlagged,
			m.zeroVariance, m.zeroDropped, m.groupsPerSec, m.lag, m.pending, m.policyVersion, m.batchSeconds, m.redisErrors,
			m.outputBacklog, m.backpressureSeconds, m.trimmed, m.refScored} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
