package advantage

import "math"

// KLTerm is the per-token KL estimate for log-probabilities logp (policy) and
// refLogp (reference) of the sampled token, from John Schulman's "Approximating
// KL Divergence" (2020), with d = logp − refLogp clamped to ±LogRatioClamp:
//
//	k1 = d
//	k2 = d²/2
//	k3 = exp(−d) + d − 1, clamped to ±K3Clamp
//
// The clamps are verl's (trainer/ppo/core_algos.py kl_penalty: "low_var_kl"
// clamps the log-ratio to [−20, 20] and the result to [−10, 10]); SkyRL does
// the same. KLNone returns 0.
func KLTerm(e KLEstimator, logp, refLogp float64) float64 {
	d := logp - refLogp
	d = max(-LogRatioClamp, min(LogRatioClamp, d))
	switch e {
	case KLK1:
		return d
	case KLK2:
		return 0.5 * d * d
	case KLK3:
		k := math.Exp(-d) + d - 1
		return max(-K3Clamp, min(K3Clamp, k))
	}
	return 0
}
