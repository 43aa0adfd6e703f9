package learner

import (
	"testing"
	"time"
)

func TestMetricsString(t *testing.T) {
	idle := Metrics{Update: 3, PolicyVersion: 2, Records: 5, Dropped: 5, Staleness: map[string]int{"4": 5}}
	if got, want := idle.String(), "update 3 (v2): nothing trained: 5 records, 5 dropped as stale map[4:5]"; got != want {
		t.Errorf("idle update:\n got %q\nwant %q", got, want)
	}
	m := Metrics{Update: 1, PolicyVersion: 0, Steps: 2, Loss: 0.5, PGLoss: 0.25, KL: 0.01, ClipFracLow: 0.1, ClipFracHigh: 0.2,
		DualClipFrac: 0.3, Entropy: 1.5, AdvAbsMean: 0.7, RatioMean: 1, RatioMax: 1.25, Mismatch: Mismatch{MaxAbs: 0.002, MeanAbs: 0.0001, K3: 1e-6},
		GradNorm: 0.9, LR: 1e-5, Tokens: 100, TokensTrained: 40, Records: 8, Dropped: 1, Seconds: 1.5, TokensPerS: 66.6}
	want := "update 1 (v0): loss 0.5000 pg 0.2500 kl 0.0100 clip 0.100/0.200/0.300 entropy 1.500 |A| 0.700 ratio 1.000 (max 1.25) " +
		"mismatch max 0.002 mean 0.0001 k3 1e-06 grad 0.900 lr 1e-05 tokens 100 (40 trained) records 8 (1 stale) 1.50s 67 tok/s"
	if got := m.String(); got != want {
		t.Errorf("trained update:\n got %q\nwant %q", got, want)
	}
}

func TestSummaryString(t *testing.T) {
	s := Summary{Updates: 2, Steps: 4, Published: 2, FirstVersion: 0, LastVersion: 2, Records: 10, Trained: 8, Dropped: 1, Rejected: 1,
		Tokens: 1000, Elapsed: 2*time.Second + 3*time.Millisecond} // shown rounded, the rate from the exact time
	want := "learn: 2 updates, 4 optimiser steps, 2 versions published (v0 → v2); records 10 read, 8 trained, 1 stale, 1 set aside; 1000 tokens in 2s (499 tokens/s)"
	if got := s.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := (Summary{}).String(); got != "learn: 0 updates, 0 optimiser steps, 0 versions published (v0 → v0); records 0 read, 0 trained, 0 stale, 0 set aside; 0 tokens in 0s (0 tokens/s)" {
		t.Errorf("zero summary: %q", got)
	}
}
