package advantage

import "math"

// Baseline turns rewards into advantages in place, against their own group,
// with estimator e. It is the one place the three estimators are written.
// Fewer than two rewards give advantage 0 (a group of one has no baseline).
//
//   - GRPO (DeepSeekMath, Shao et al. 2024, eq. 3): A_i = (R_i − mean(R)) /
//     (std(R) + eps), std the unbiased (n−1) sample standard deviation, as
//     torch.std computes it in TRL and verl.
//   - Dr.GRPO (Liu et al. 2025, section 3.2): A_i = R_i − mean(R).
//   - RLOO (Kool et al. 2019; Ahmadian et al. 2024, eq. 6):
//     A_i = R_i − 1/(n−1) Σ_{j≠i} R_j.
func Baseline(rewards []float64, e Estimator, eps float64) {
	n := len(rewards)
	if n < 2 {
		for i := range rewards {
			rewards[i] = 0
		}
		return
	}
	var sum float64
	for _, r := range rewards {
		sum += r
	}
	mean := sum / float64(n)
	switch e {
	case EstimatorRLOO:
		for i, r := range rewards {
			rewards[i] = r - (sum-r)/float64(n-1)
		}
	case EstimatorDrGRPO:
		for i, r := range rewards {
			rewards[i] = r - mean
		}
	default:
		var ss float64
		for _, r := range rewards {
			ss += (r - mean) * (r - mean)
		}
		std := math.Sqrt(ss / float64(n-1))
		for i, r := range rewards {
			rewards[i] = (r - mean) / (std + eps)
		}
	}
}

// allEqual reports whether every value is the same (true for fewer than two).
func allEqual(values []float64) bool {
	for _, v := range values[min(1, len(values)):] {
		if v != values[0] {
			return false
		}
	}
	return true
}
