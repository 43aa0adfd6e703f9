package advantage

import (
	"math"

	"github.com/toolrl/toolrl/traj"
)

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
	switch e {
	case KLK1:
		return klK1(logp, refLogp)
	case KLK2:
		return klK2(logp, refLogp)
	case KLK3:
		return klK3(logp, refLogp)
	}
	return 0
}

func klK1(logp, refLogp float64) float64 { return clamp(logp-refLogp, LogRatioClamp) }

func klK2(logp, refLogp float64) float64 {
	d := clamp(logp-refLogp, LogRatioClamp)
	return 0.5 * d * d
}

func klK3(logp, refLogp float64) float64 {
	d := clamp(logp-refLogp, LogRatioClamp)
	return clamp(math.Exp(-d)+d-1, K3Clamp)
}

// tokenKL writes KLTerm(e, logp[j], ref[j]) to kl[j] for every j where
// mask[j] is 1 (bit for bit), and 0 where it is not. kl, logp and ref have
// len(mask) entries.
func tokenKL(e KLEstimator, kl, logp, ref []float32, mask traj.Mask) {
	n := len(mask)
	kl, logp, ref = kl[:n], logp[:n], ref[:n]
	switch e {
	case KLK1, KLK2:
		term := klK1
		if e == KLK2 {
			term = klK2
		}
		for j, m := range mask {
			kl[j] = 0
			if m == 1 {
				kl[j] = float32(term(float64(logp[j]), float64(ref[j])))
			}
		}
	case KLK3:
		tokenK3(kl, logp, ref, mask) // k3_amd64.s: four tokens at a time
	}
}

// tokenK3Scalar is tokenKL for k3, one token at a time. It runs in chunks
// of three passes: the sampled tokens' log-ratios, then exp over the chunk,
// then the stores. One loop doing all three is 2.5 times slower on amd64:
// each float32→float64 conversion (CVTSS2SD) merges into a register that
// last held the previous token's exp, so no two exps overlap.
func tokenK3Scalar(kl, logp, ref []float32, mask traj.Mask) {
	n := len(mask)
	kl, logp, ref = kl[:n], logp[:n], ref[:n]
	clear(kl)
	const chunk = 64
	var d [chunk]float64
	var at [chunk]int32
	for base := 0; base < n; {
		// Gather up to a chunk of sampled tokens' log-ratios.
		c := 0
		for ; base < n && c < chunk; base++ {
			if mask[base] == 1 {
				d[c] = clamp(float64(logp[base])-float64(ref[base]), LogRatioClamp)
				at[c] = int32(base)
				c++
			}
		}
		for k := range d[:c] {
			// klK3 after its clamp.
			d[k] = clamp(math.Exp(-d[k])+d[k]-1, K3Clamp)
		}
		for k, j := range at[:c] {
			kl[j] = float32(d[k])
		}
	}
}

// clamp is max(-c, min(c, x)) for c > 0 (NaN stays NaN, -0 stays -0), with
// two comparisons: the float min and max builtins' NaN and signed-zero
// handling cost more, in the per-token KL loop.
func clamp(x, c float64) float64 {
	if x > c {
		return c
	}
	if x < -c {
		return -c
	}
	return x
}
