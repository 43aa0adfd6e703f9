package learner

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Every term of an update is its own gauge, named with its unit; the
// label-multiplexed last_update{metric} and rollout_mismatch{stat}, and the
// tokens_per_s rate, are gone.
func TestPrometheusOneGaugePerTerm(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	p, err := NewPrometheus(reg)
	if err != nil {
		t.Fatal(err)
	}
	p.ObserveUpdate(Metrics{
		Steps: 2, Epochs: 1, Records: 4, Tokens: 100, TokensTrained: 40, Staleness: map[string]int{"0": 3, "1": 1},
		Loss: 0.5, PGLoss: 0.25, KL: 0.125, ClipFracHigh: 0.1, ClipFracLow: 0.2, DualClipFrac: 0.3, RatioMean: 1.01, RatioMax: 1.5,
		Entropy: 2.5, AdvAbsMean: 0.75, GradNorm: 3, LR: 1e-4, Mismatch: Mismatch{MaxAbs: 0.9, MeanAbs: 0.09, K3: 0.009},
		Seconds: 0.2, TokensPerS: 500,
	})
	want := map[string]float64{
		"toolrl_learner_loss": 0.5, "toolrl_learner_pg_loss": 0.25, "toolrl_learner_kl": 0.125,
		"toolrl_learner_clip_high_ratio": 0.1, "toolrl_learner_clip_low_ratio": 0.2, "toolrl_learner_clip_dual_ratio": 0.3,
		"toolrl_learner_importance_ratio_mean": 1.01, "toolrl_learner_importance_ratio_max": 1.5,
		"toolrl_learner_entropy_nats": 2.5, "toolrl_learner_advantage_abs_mean": 0.75, "toolrl_learner_grad_norm": 3,
		"toolrl_learner_learning_rate": 1e-4, "toolrl_learner_rollout_mismatch_max_abs": 0.9,
		"toolrl_learner_rollout_mismatch_mean_abs": 0.09, "toolrl_learner_rollout_mismatch_k3": 0.009,
		"toolrl_learner_tokens_total": 100, "toolrl_learner_tokens_trained_total": 40, "toolrl_learner_updates_total": 1,
		"toolrl_learner_optimizer_steps_total": 2, "toolrl_learner_records_total": 4,
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if len(f.GetMetric()) != 1 || len(f.GetMetric()[0].GetLabel()) != 0 {
			t.Errorf("%s has %d series or labels: one unlabelled series each", f.GetName(), len(f.GetMetric()))
			continue
		}
		m := f.GetMetric()[0]
		got[f.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		if strings.Contains(f.GetName(), "per_s") || strings.HasSuffix(f.GetName(), "last_update") || f.GetName() == "toolrl_learner_rollout_mismatch" {
			t.Errorf("%s is still exposed", f.GetName())
		}
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || g != v {
			t.Errorf("%s = %g (present %v), want %g", name, g, ok, v)
		}
	}
	if n := testutil.CollectAndCount(p.staleness); n != 1 {
		t.Errorf("record_staleness_versions: %d series", n)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP toolrl_learner_record_staleness_versions Learner version minus record policy_version, per record read, in policy versions.
# TYPE toolrl_learner_record_staleness_versions histogram
toolrl_learner_record_staleness_versions_bucket{le="0"} 3
toolrl_learner_record_staleness_versions_bucket{le="1"} 4
toolrl_learner_record_staleness_versions_bucket{le="2"} 4
toolrl_learner_record_staleness_versions_bucket{le="3"} 4
toolrl_learner_record_staleness_versions_bucket{le="4"} 4
toolrl_learner_record_staleness_versions_bucket{le="6"} 4
toolrl_learner_record_staleness_versions_bucket{le="8"} 4
toolrl_learner_record_staleness_versions_bucket{le="16"} 4
toolrl_learner_record_staleness_versions_bucket{le="+Inf"} 4
toolrl_learner_record_staleness_versions_sum 1
toolrl_learner_record_staleness_versions_count 4
`), "toolrl_learner_record_staleness_versions"); err != nil {
		t.Error(err)
	}
}
