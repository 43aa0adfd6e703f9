package learner

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolrl/toolrl/policystore"
)

// Prometheus holds the learner's series (namespace toolrl_learner): gauges
// of the last update's terms, counters of the work done, and a histogram of
// record staleness.
type Prometheus struct {
	updates, records, dropped, tokens, trained, steps, published prometheus.Counter
	version                                                      prometheus.Gauge
	last                                                         *prometheus.GaugeVec
	mismatch                                                     *prometheus.GaugeVec
	staleness                                                    prometheus.Histogram
	seconds                                                      prometheus.Histogram
}

// NewPrometheus registers the learner's series with reg.
func NewPrometheus(reg prometheus.Registerer) (*Prometheus, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "toolrl", Subsystem: "learner", Name: name, Help: help})
	}
	p := &Prometheus{
		updates:   counter("updates_total", "Updates (batches) that trained."),
		records:   counter("records_total", "Advantage records read."),
		dropped:   counter("dropped_stale_total", "Records dropped for lagging the learner's version by more than max_staleness."),
		tokens:    counter("tokens_total", "Tokens (prompt and response) through forward and backward, epochs counted."),
		trained:   counter("tokens_trained_total", "Trained (loss mask 1) tokens."),
		steps:     counter("optimizer_steps_total", "AdamW steps."),
		published: counter("published_total", "Policy versions published."),
		version:   prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "toolrl", Subsystem: "learner", Name: "policy_version", Help: "The latest published policy version."}),
		last: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "toolrl", Subsystem: "learner", Name: "last_update",
			Help: "The last update's metrics by name (loss, pg_loss, kl, clip_frac_high, clip_frac_low, clip_frac_dual, entropy, adv_abs_mean, grad_norm, lr, ratio_mean, ratio_max, tokens_per_s)."}, []string{"metric"}),
		mismatch: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "toolrl", Subsystem: "learner", Name: "rollout_mismatch",
			Help: "Learner vs behaviour logprobs before the last update: max_abs, mean_abs, k3."}, []string{"stat"}),
		staleness: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "toolrl", Subsystem: "learner", Name: "record_staleness",
			Help: "Learner version minus record policy_version, per record read.", Buckets: []float64{0, 1, 2, 3, 4, 6, 8, 16}}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "toolrl", Subsystem: "learner", Name: "update_seconds",
			Help: "Wall time of one update.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}),
	}
	for _, c := range []prometheus.Collector{p.updates, p.records, p.dropped, p.tokens, p.trained, p.steps, p.published, p.version, p.last, p.mismatch, p.staleness, p.seconds} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// ObserveUpdate records one update's metrics.
func (p *Prometheus) ObserveUpdate(m Metrics) {
	p.records.Add(float64(m.Records))
	p.dropped.Add(float64(m.Dropped))
	for lag, n := range m.Staleness {
		v, err := strconv.ParseFloat(lag, 64)
		if err != nil {
			continue
		}
		for range n {
			p.staleness.Observe(v)
		}
	}
	if m.Steps == 0 {
		return
	}
	p.updates.Inc()
	p.steps.Add(float64(m.Steps))
	p.tokens.Add(float64(m.Tokens * m.Epochs))
	p.trained.Add(float64(m.TokensTrained))
	p.seconds.Observe(m.Seconds)
	for name, v := range map[string]float64{
		"loss": m.Loss, "pg_loss": m.PGLoss, "kl": m.KL, "clip_frac_high": m.ClipFracHigh, "clip_frac_low": m.ClipFracLow,
		"clip_frac_dual": m.DualClipFrac, "entropy": m.Entropy, "adv_abs_mean": m.AdvAbsMean, "grad_norm": m.GradNorm,
		"lr": m.LR, "ratio_mean": m.RatioMean, "ratio_max": m.RatioMax, "tokens_per_s": m.TokensPerS,
	} {
		p.last.WithLabelValues(name).Set(v)
	}
	p.mismatch.WithLabelValues("max_abs").Set(m.Mismatch.MaxAbs)
	p.mismatch.WithLabelValues("mean_abs").Set(m.Mismatch.MeanAbs)
	p.mismatch.WithLabelValues("k3").Set(m.Mismatch.K3)
}

// ObservePublish records a published version.
func (p *Prometheus) ObservePublish(v policystore.Version) {
	p.published.Inc()
	p.version.Set(float64(v.Number))
}
