package learner

import (
	"fmt"
	"io"
	"math"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/traj"
)

// RefMismatch accumulates, over the policy tokens (loss mask 1) of
// trajectories that carry ref_log_prob, how far the recorded behaviour
// logprobs are from the reference model's: the learner's rollout_mismatch
// statistics (Mismatch: mean and max |Δlogprob|, mean k3 of
// KL(behaviour ‖ reference) as advantage.KLTerm computes it) with the
// reference in the learner's place. A rollout sampled by a quantized actor
// and scored with --ref-model set to the full-precision folder measures the
// quantization's off-policy gap. The zero value is empty and ready to use.
type RefMismatch struct {
	tokens                int64
	sumAbs, maxAbs, sumK3 float64
}

// Add counts t's policy tokens; a trajectory without a reference logprob
// for each token adds nothing.
func (m *RefMismatch) Add(t *traj.Trajectory) {
	if len(t.RefLogprobs) != len(t.Logprobs) {
		return
	}
	for i, mk := range t.LossMask {
		if mk != 1 {
			continue
		}
		b, ref := float64(t.Logprobs[i]), float64(t.RefLogprobs[i])
		d := math.Abs(b - ref)
		m.sumAbs += d
		m.maxAbs = max(m.maxAbs, d)
		m.sumK3 += advantage.KLTerm(advantage.KLK3, b, ref)
		m.tokens++
	}
}

// Report returns the statistics, nil when no token had a reference logprob.
func (m *RefMismatch) Report() *Mismatch {
	if m.tokens == 0 {
		return nil
	}
	n := float64(m.tokens)
	return &Mismatch{MaxAbs: m.maxAbs, MeanAbs: m.sumAbs / n, K3: m.sumK3 / n}
}

// WriteText writes the statistics as toolrl inspect's "ref mismatch" line,
// nothing when no token had a reference logprob.
func (m *RefMismatch) WriteText(w io.Writer) error {
	r := m.Report()
	if r == nil {
		return nil
	}
	_, err := fmt.Fprintf(w, "ref mismatch     rollout_log_probs vs ref_log_prob over %d policy tokens: mean |Δ| %.4g, max |Δ| %.4g, mean k3 %.4g\n",
		m.tokens, r.MeanAbs, r.MaxAbs, r.K3)
	return err
}
