package learner

import (
	"fmt"
	"math"

	"github.com/toolrl/toolrl/advantage"
)

// Aggregation says how per-token losses become the minibatch loss; the names
// are verl's loss_agg_mode values.
type Aggregation string

const (
	// TokenMean averages over every trained token of the minibatch (DAPO's
	// token-level loss; verl's and TRL's default "token-mean"/"dapo").
	TokenMean Aggregation = "token-mean"
	// SeqMeanTokenMean averages each sequence's tokens, then the sequences
	// (the original GRPO objective, 1/G Σ_i 1/|o_i| Σ_t).
	SeqMeanTokenMean Aggregation = "seq-mean-token-mean"
	// SeqMeanTokenSumNorm sums each sequence's tokens and divides by a
	// constant length L and by the number of sequences of the minibatch,
	// those without a trained token included (Dr.GRPO, Liu et al. 2025: no
	// length normalisation, 1/(G·L) Σ_i Σ_t with G the minibatch's
	// sequences).
	SeqMeanTokenSumNorm Aggregation = "seq-mean-token-sum-norm"
)

// ParseAggregation checks a --loss-agg value.
func ParseAggregation(s string) (Aggregation, error) {
	switch a := Aggregation(s); a {
	case TokenMean, SeqMeanTokenMean, SeqMeanTokenSumNorm:
		return a, nil
	}
	return "", fmt.Errorf("loss aggregation %q: want %s, %s or %s", s, TokenMean, SeqMeanTokenMean, SeqMeanTokenSumNorm)
}

// LossConfig holds the policy loss's knobs. Zero is meaningful for DualClip,
// TISCap and KLBeta (off), so start from DefaultLossConfig.
type LossConfig struct {
	// ClipLow and ClipHigh bound the ratio to [1−ClipLow, 1+ClipHigh]
	// (PPO's ε; DAPO's clip-higher uses a larger upper ε). Defaults 0.2, 0.28.
	ClipLow, ClipHigh float64
	// DualClip is the dual-clip constant c > 1 (Ye et al. 2020): for a
	// negative advantage the token loss is at most −c·A. 0 turns it off.
	// Default 3.
	DualClip float64
	// TISCap, when > 0, turns on truncated importance sampling against the
	// rollout/learner mismatch: each token's loss is weighted by
	// min(π_learner_old/π_behaviour, TISCap) and the ratio is taken against
	// the learner's own logprobs before the update. Default 0 (off; verl's
	// tis_imp_ratio_cap, commonly 2).
	TISCap float64
	// KLBeta weighs the k3 KL to the reference policy in the loss (verl's
	// kl_loss_coef with kl_loss_type low_var_kl). Default 0.
	KLBeta float64
	// Agg aggregates token losses. Default TokenMean.
	Agg Aggregation
	// NormLength is SeqMeanTokenSumNorm's constant L (a generation budget in
	// tokens); ignored by the other aggregations.
	NormLength int
}

// DefaultLossConfig returns the defaults the CLI shows (Spec's).
func DefaultLossConfig() LossConfig { return DefaultOptions().Loss }

// Validate reports a value the loss cannot use, naming it by its YAML key
// (Spec).
func (c LossConfig) Validate() error {
	return c.validate(func(key string) string { return key })
}

// validate is Validate with the settings named by name(key).
func (c LossConfig) validate(name func(key string) string) error {
	switch {
	case !(c.ClipLow > 0 && c.ClipLow < 1):
		return fmt.Errorf("%s %g: want 0 < ε < 1", name("clip_low"), c.ClipLow)
	case !(c.ClipHigh > 0) || math.IsInf(c.ClipHigh, 0):
		return fmt.Errorf("%s %g: want a finite ε > 0", name("clip_high"), c.ClipHigh)
	case c.DualClip != 0 && !(c.DualClip > 1):
		return fmt.Errorf("%s %g: want c > 1, or 0 to turn it off", name("dual_clip"), c.DualClip)
	case c.TISCap < 0 || math.IsNaN(c.TISCap):
		return fmt.Errorf("%s %g: want C > 0, or 0 to turn it off", name("tis_cap"), c.TISCap)
	case c.KLBeta < 0 || math.IsNaN(c.KLBeta):
		return fmt.Errorf("%s %g: want ≥ 0", name("kl_beta"), c.KLBeta)
	case c.Agg == SeqMeanTokenSumNorm && c.NormLength <= 0:
		return fmt.Errorf("%s %d: want > 0 with %s", name("loss_norm_length"), c.NormLength, SeqMeanTokenSumNorm)
	}
	if _, err := ParseAggregation(string(c.Agg)); err != nil {
		return fmt.Errorf("%s: %w", name("loss_agg"), err)
	}
	return nil
}

// Tokens are the trained tokens of one minibatch, one entry per token in
// every slice, grouped by sequence.
type Tokens struct {
	// Seq is the token's sequence index in [0, NumSeqs).
	Seq     []int
	NumSeqs int
	// Logp is the current policy's logprob (the variable the gradient is
	// taken against).
	Logp []float64
	// Base is the logprob the ratio is taken against: the behaviour policy's,
	// or with TIS the learner's before the update.
	Base []float64
	// Advantage is the token's advantage.
	Advantage []float64
	// TISWeight is min(π_learner_old/π_behaviour, C) per token; nil when off.
	TISWeight []float64
	// RefLogp is the reference policy's logprob; nil when no KL is taken,
	// NaN for a token without a reference (no KL term, not in the KL mean).
	RefLogp []float64
}

// LossStats are one minibatch's loss terms and fractions (token means,
// whatever the aggregation, so runs with different aggregations compare).
type LossStats struct {
	Loss   float64 // the aggregated loss the gradient is of
	PGLoss float64 // the aggregated policy-gradient part
	KL     float64 // mean of k3 to the reference over the KLTokens tokens that have one
	// KLTokens counts the tokens with a reference logprob.
	KLTokens int
	// ClipFracHigh: tokens with A > 0 whose ratio passed 1+ClipHigh (their
	// gradient is cut); ClipFracLow: A < 0 and ratio below 1−ClipLow;
	// DualClipFrac: A < 0 and ratio above DualClip (bounded by −c·A).
	ClipFracHigh, ClipFracLow, DualClipFrac float64
	RatioMean, RatioMax                     float64
	AdvAbsMean                              float64
	Tokens                                  int
}

// Weights returns each token's weight in the aggregated loss: the loss is
// Σ_t w_t·ℓ_t.
func (c LossConfig) Weights(seq []int, numSeqs int) []float64 {
	w := make([]float64, len(seq))
	switch c.Agg {
	case SeqMeanTokenMean:
		count := make([]int, numSeqs)
		for _, s := range seq {
			count[s]++
		}
		nonEmpty := 0
		for _, n := range count {
			if n > 0 {
				nonEmpty++
			}
		}
		for i, s := range seq {
			w[i] = 1 / float64(count[s]*nonEmpty)
		}
	case SeqMeanTokenSumNorm:
		for i := range w {
			w[i] = 1 / float64(numSeqs*c.NormLength)
		}
	default:
		for i := range w {
			w[i] = 1 / float64(len(seq))
		}
	}
	return w
}

// Compute returns the loss and its gradient with respect to each token's
// Logp. Per token, with r = exp(clamp(logp − base, ±20)) (verl's
// compute_policy_loss):
//
//	ℓ_pg  = max(−A·r, −A·clip(r, 1−ε_low, 1+ε_high))
//	ℓ_pg  = min(ℓ_pg, −c·A)  when A < 0 and dual clip is on
//	ℓ     = w_tis·ℓ_pg + β·k3(logp, ref)
//
// k3 is advantage.KLTerm's (log-ratio clamped to ±20, value to ±10), its
// gradient 1 − exp(ref − logp) inside the clamps and 0 outside. The weights
// of Weights aggregate ℓ. A clamped or clipped branch passes no gradient.
func (c LossConfig) Compute(tok Tokens, weights []float64) (LossStats, []float64) {
	n := len(tok.Logp)
	grad := make([]float64, n)
	st := LossStats{Tokens: n}
	if n == 0 {
		return st, grad
	}
	lo, hi := 1-c.ClipLow, 1+c.ClipHigh
	var klSum, ratioSum float64
	var klN int
	var clipHigh, clipLow, dual int
	for i := range n {
		a := tok.Advantage[i]
		st.AdvAbsMean += math.Abs(a)
		d := tok.Logp[i] - tok.Base[i]
		inside := d > -advantage.LogRatioClamp && d < advantage.LogRatioClamp
		d = max(-advantage.LogRatioClamp, min(advantage.LogRatioClamp, d))
		r := math.Exp(d)
		ratioSum += r
		st.RatioMax = max(st.RatioMax, r)
		// dℓ/dlogp of the chosen branch, before weights; −A·r is the
		// unclipped branch's value and its derivative.
		loss1 := -a * r
		rc := min(hi, max(lo, r))
		loss2 := -a * rc
		pg, g := loss1, -a*r
		if loss2 > loss1 {
			// the clipped branch is larger: the clip is active, no gradient
			pg, g = loss2, 0
			if a > 0 {
				clipHigh++
			} else if a < 0 {
				clipLow++
			}
		}
		if c.DualClip > 0 && a < 0 {
			if bound := -c.DualClip * a; pg > bound {
				pg, g = bound, 0
				dual++
			}
		}
		if !inside {
			g = 0
		}
		wt := 1.0
		if tok.TISWeight != nil {
			wt = tok.TISWeight[i]
		}
		st.PGLoss += weights[i] * wt * pg
		total := wt * pg
		grad[i] = weights[i] * wt * g
		if tok.RefLogp != nil && !math.IsNaN(tok.RefLogp[i]) {
			k3 := advantage.KLTerm(advantage.KLK3, tok.Logp[i], tok.RefLogp[i])
			klSum += k3
			klN++
			if c.KLBeta > 0 {
				total += c.KLBeta * k3
				grad[i] += weights[i] * c.KLBeta * k3Grad(tok.Logp[i], tok.RefLogp[i])
			}
		}
		st.Loss += weights[i] * total
	}
	fn := float64(n)
	if klN > 0 {
		st.KL = klSum / float64(klN)
	}
	st.KLTokens = klN
	st.ClipFracHigh, st.ClipFracLow, st.DualClipFrac = float64(clipHigh)/fn, float64(clipLow)/fn, float64(dual)/fn
	st.RatioMean = ratioSum / fn
	st.AdvAbsMean /= fn
	return st, grad
}

// k3Grad is d k3/d logp for k3 = exp(−d) + d − 1, d = logp − ref: 1 − exp(−d),
// 0 where advantage.KLTerm clamps the log-ratio or the value.
func k3Grad(logp, ref float64) float64 {
	d := logp - ref
	if d <= -advantage.LogRatioClamp || d >= advantage.LogRatioClamp {
		return 0
	}
	k := math.Exp(-d) + d - 1
	if k >= advantage.K3Clamp || k <= -advantage.K3Clamp {
		return 0
	}
	return 1 - math.Exp(-d)
}
