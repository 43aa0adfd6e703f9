//go:build !amd64

package traj

// logprobsBad is checkLogprobs' first pass: whether one of lp (with mask
// as long) is not finite, > 0, or nonzero where mask is 0.
func logprobsBad(lp []float32, mask Mask) bool { return logprobsBadScalar(lp, mask) }

// anyNonFinite reports whether one of vs is NaN or ±Inf.
func anyNonFinite(vs []float32) bool { return anyNonFiniteScalar(vs) }
