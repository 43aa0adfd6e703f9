package learner

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolrl/toolrl/policystore"
)

// Prometheus holds the learner's series (namespace toolrl_learner; every
// one is listed in docs/metrics.md): counters of the work done, one gauge
// per term of the last update, histograms of update time and record
// staleness. Throughput is a rate of the counters (rate of tokens_total),
// not a gauge.
type Prometheus struct {
	updates, records, dropped, tokens, trained, steps, published prometheus.Counter
	version                                                      prometheus.Gauge
	// The last update's terms, one gauge each.
	loss, pgLoss, kl, entropy, advAbsMean, gradNorm, lr prometheus.Gauge
	clipHigh, clipLow, clipDual, ratioMean, ratioMax    prometheus.Gauge
	// Learner vs behaviour logprobs before the last update.
	mismatchMaxAbs, mismatchMeanAbs, mismatchK3 prometheus.Gauge
	staleness                                   prometheus.Histogram
	seconds                                     prometheus.Histogram
}

// NewPrometheus registers the learner's series with reg.
func NewPrometheus(reg prometheus.Registerer) (*Prometheus, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "toolrl", Subsystem: "learner", Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "toolrl", Subsystem: "learner", Name: name, Help: help})
	}
	p := &Prometheus{
		updates:    counter("updates_total", "Updates (batches) that trained."),
		records:    counter("records_total", "Advantage records read."),
		dropped:    counter("dropped_stale_total", "Records dropped for lagging the learner's version by more than max_staleness."),
		tokens:     counter("tokens_total", "Tokens (prompt and response) through forward and backward, epochs counted; rate() of it is the training throughput."),
		trained:    counter("tokens_trained_total", "Trained (loss mask 1) tokens."),
		steps:      counter("optimizer_steps_total", "AdamW steps."),
		published:  counter("published_total", "Policy versions published."),
		version:    gauge("policy_version", "The latest published policy version."),
		loss:       gauge("loss", "The last update's loss (mean over its optimizer steps)."),
		pgLoss:     gauge("pg_loss", "The last update's policy-gradient loss (mean over its optimizer steps)."),
		kl:         gauge("kl", "The last update's KL estimate to the reference policy, per token with a reference (nats; 0 without one)."),
		entropy:    gauge("entropy_nats", "The last update's mean policy entropy per trained token, in nats."),
		advAbsMean: gauge("advantage_abs_mean", "The last update's mean |advantage| over trained tokens."),
		gradNorm:   gauge("grad_norm", "The last update's gradient L2 norm before clipping (mean over its optimizer steps)."),
		lr:         gauge("learning_rate", "The learning rate of the last update's last optimizer step."),
		clipHigh:   gauge("clip_high_ratio", "Share of the last update's trained tokens clipped at 1+epsilon_high (0 to 1)."),
		clipLow:    gauge("clip_low_ratio", "Share of the last update's trained tokens clipped at 1-epsilon_low (0 to 1)."),
		clipDual:   gauge("clip_dual_ratio", "Share of the last update's trained tokens clipped by the dual clip (0 to 1)."),
		ratioMean:  gauge("importance_ratio_mean", "The last update's mean importance ratio pi/pi_old over trained tokens."),
		ratioMax:   gauge("importance_ratio_max", "The last update's largest importance ratio pi/pi_old."),
		mismatchMaxAbs: gauge("rollout_mismatch_max_abs",
			"Largest |learner logprob - behaviour logprob| over the last update's trained tokens, before it trained (nats)."),
		mismatchMeanAbs: gauge("rollout_mismatch_mean_abs",
			"Mean |learner logprob - behaviour logprob| over the last update's trained tokens, before it trained (nats)."),
		mismatchK3: gauge("rollout_mismatch_k3",
			"k3 estimate of KL(behaviour || learner) over the last update's trained tokens, before it trained (nats per token)."),
		staleness: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "toolrl", Subsystem: "learner", Name: "record_staleness_versions",
			Help: "Learner version minus record policy_version, per record read, in policy versions.", Buckets: []float64{0, 1, 2, 3, 4, 6, 8, 16}}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "toolrl", Subsystem: "learner", Name: "update_seconds",
			Help: "Wall time of one update that trained: forward, backward and optimizer steps of its epochs.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}),
	}
	for _, c := range []prometheus.Collector{p.updates, p.records, p.dropped, p.tokens, p.trained, p.steps, p.published, p.version,
		p.loss, p.pgLoss, p.kl, p.entropy, p.advAbsMean, p.gradNorm, p.lr, p.clipHigh, p.clipLow, p.clipDual, p.ratioMean, p.ratioMax,
		p.mismatchMaxAbs, p.mismatchMeanAbs, p.mismatchK3, p.staleness, p.seconds} {
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
	for g, v := range map[prometheus.Gauge]float64{
		p.loss: m.Loss, p.pgLoss: m.PGLoss, p.kl: m.KL, p.entropy: m.Entropy, p.advAbsMean: m.AdvAbsMean,
		p.gradNorm: m.GradNorm, p.lr: m.LR, p.clipHigh: m.ClipFracHigh, p.clipLow: m.ClipFracLow, p.clipDual: m.DualClipFrac,
		p.ratioMean: m.RatioMean, p.ratioMax: m.RatioMax,
		p.mismatchMaxAbs: m.Mismatch.MaxAbs, p.mismatchMeanAbs: m.Mismatch.MeanAbs, p.mismatchK3: m.Mismatch.K3,
	} {
		g.Set(v)
	}
}

// ObservePublish records a published version.
func (p *Prometheus) ObservePublish(v policystore.Version) {
	p.published.Inc()
	p.version.Set(float64(v.Number))
}
