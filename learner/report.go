package learner

import (
	"fmt"
	"time"
)

// String is the readable line of one update (toolrl learn prints it to
// stderr; the JSON line goes to --metrics).
func (m Metrics) String() string {
	if m.Steps == 0 {
		return fmt.Sprintf("update %d (v%d): nothing trained: %d records, %d dropped as stale %v", m.Update, m.PolicyVersion, m.Records, m.Dropped, m.Staleness)
	}
	return fmt.Sprintf("update %d (v%d): loss %.4f pg %.4f kl %.4f clip %.3f/%.3f/%.3f entropy %.3f |A| %.3f ratio %.3f (max %.2f) "+
		"mismatch max %.2g mean %.2g k3 %.2g grad %.3f lr %.2g tokens %d (%d trained) records %d (%d stale) %.2fs %.0f tok/s",
		m.Update, m.PolicyVersion, m.Loss, m.PGLoss, m.KL, m.ClipFracLow, m.ClipFracHigh, m.DualClipFrac, m.Entropy, m.AdvAbsMean,
		m.RatioMean, m.RatioMax, m.Mismatch.MaxAbs, m.Mismatch.MeanAbs, m.Mismatch.K3, m.GradNorm, m.LR, m.Tokens, m.TokensTrained,
		m.Records, m.Dropped, m.Seconds, m.TokensPerS)
}

// String is the run's closing line: updates, versions, records and
// throughput (tokens per second of Elapsed; 0 when Elapsed is 0).
func (s Summary) String() string {
	tps := 0.0
	if s.Elapsed > 0 {
		tps = float64(s.Tokens) / s.Elapsed.Seconds()
	}
	return fmt.Sprintf("learn: %d updates, %d optimiser steps, %d versions published (v%d → v%d); records %d read, %d trained, %d stale, %d set aside; %d tokens in %s (%.0f tokens/s)",
		s.Updates, s.Steps, s.Published, s.FirstVersion, s.LastVersion, s.Records, s.Trained, s.Dropped, s.Rejected, s.Tokens,
		s.Elapsed.Round(10*time.Millisecond), tps)
}
