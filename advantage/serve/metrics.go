package serve

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolrl/toolrl/stream"
)

// metrics are the service's Prometheus series (namespace toolrl_advantage;
// docs/metrics.md lists them).
type metrics struct {
	groups        prometheus.Counter
	records       prometheus.Counter
	duplicates    prometheus.Counter
	deadLetters   prometheus.Counter
	staleDropped  prometheus.Counter
	staleFlagged  prometheus.Counter
	zeroVariance  prometheus.Counter
	zeroDropped   prometheus.Counter
	policyVersion prometheus.Gauge
	batchSeconds  prometheus.Histogram
	redisErrors   prometheus.Counter

	outputBacklog       prometheus.Gauge
	backpressureSeconds prometheus.Counter
	trimmed             prometheus.Counter
	refScored           prometheus.Counter

	depth *depthCollector
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
		policyVersion: gauge("policy_version", "The trainer's policy version last read from Redis."),
		batchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "toolrl", Subsystem: "advantage", Name: "batch_seconds",
			Help: "Time to decode, compute, encode and commit one batch.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		redisErrors: counter("redis_errors_total", "Redis calls that failed and were retried."),
		outputBacklog: gauge("output_backlog_entries",
			"Unconsumed records of the advantages stream as backpressure counts them: pending plus undelivered of the slowest trainer group (0 while there is none); read before each batch while max_output_backlog is on."),
		backpressureSeconds: counter("backpressure_seconds_total",
			"Time workers spent waiting for trainers because the advantages stream was at max_output_backlog."),
		trimmed:   counter("trimmed_entries_total", "Entries deleted from the groups and advantages streams after every consumer group acknowledged them."),
		refScored: counter("ref_scored_total", "Trajectories whose ref_logprobs were computed by the reference model (--ref-model)."),
		depth:     newDepthCollector(),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.groups, m.records, m.duplicates, m.deadLetters, m.staleDropped, m.staleFlagged,
			m.zeroVariance, m.zeroDropped, m.policyVersion, m.batchSeconds, m.redisErrors,
			m.outputBacklog, m.backpressureSeconds, m.trimmed, m.refScored, m.depth} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// streamDepth is one stream's length and its consumer groups' standing, as
// read at one refresh.
type streamDepth struct {
	stream string // the stream's role: prompts, groups, advantages or dead
	length int64
	groups []stream.GroupDepth
}

// depthCollector serves the streams' depths last read by the service's
// refresh (every MetricsInterval) at scrape time: a group that is deleted
// leaves the series at the next refresh. Safe for concurrent use.
type depthCollector struct {
	length, pending, lag *prometheus.Desc

	mu     sync.Mutex
	depths []streamDepth
}

func newDepthCollector() *depthCollector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName("toolrl", "advantage", name), help, labels, nil)
	}
	return &depthCollector{
		length: desc("stream_length_entries",
			"Entries in the job's stream (XLEN), by stream: prompts (the distributed actors' work queue), groups (the service's input), advantages (its output), dead (dead letters).", "stream"),
		pending: desc("stream_pending_entries",
			"Entries of the stream delivered to the consumer group and not yet acknowledged (XINFO GROUPS pending), by stream and group.", "stream", "group"),
		lag: desc("stream_lag_entries",
			"Entries of the stream not yet delivered to the consumer group (XINFO GROUPS lag), by stream and group; absent while Redis cannot tell.", "stream", "group"),
	}
}

// set replaces the depths served.
func (d *depthCollector) set(depths []streamDepth) {
	d.mu.Lock()
	d.depths = depths
	d.mu.Unlock()
}

// Describe sends the three series' descriptions.
func (d *depthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- d.length
	ch <- d.pending
	ch <- d.lag
}

// Collect sends the depths last set.
func (d *depthCollector) Collect(ch chan<- prometheus.Metric) {
	d.mu.Lock()
	depths := d.depths
	d.mu.Unlock()
	for _, sd := range depths {
		ch <- prometheus.MustNewConstMetric(d.length, prometheus.GaugeValue, float64(sd.length), sd.stream)
		for _, g := range sd.groups {
			ch <- prometheus.MustNewConstMetric(d.pending, prometheus.GaugeValue, float64(g.Pending), sd.stream, g.Group)
			if g.Lag >= 0 {
				ch <- prometheus.MustNewConstMetric(d.lag, prometheus.GaugeValue, float64(g.Lag), sd.stream, g.Group)
			}
		}
	}
}
