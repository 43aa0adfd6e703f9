package traj

import "golang.org/x/sys/cpu"

// haveAVX2 selects logprobsBadAVX2 for checkLogprobs' first pass.
var haveAVX2 = cpu.X86.HasAVX2

// logprobsBadAVX2 is nonzero when one of lp[0:n] (n a multiple of 8) is not
// finite, > 0, or nonzero where mask is 0.
//
//go:noescape
func logprobsBadAVX2(lp *float32, mask *uint8, n int) uint32

// logprobsBad is checkLogprobs' first pass: whether one of lp (with mask
// as long) is not finite, > 0, or nonzero where mask is 0; eight values at
// a time where the CPU allows.
func logprobsBad(lp []float32, mask Mask) bool {
	i := 0
	if haveAVX2 {
		if i = len(lp) &^ 7; i > 0 && logprobsBadAVX2(&lp[0], &mask[0], i) != 0 {
			return true
		}
	}
	return logprobsBadScalar(lp[i:], mask[i:len(lp)])
}

// nonFiniteAVX2 is nonzero when one of vs[0:n] (n a multiple of 8) is NaN or
// ±Inf.
//
//go:noescape
func nonFiniteAVX2(vs *float32, n int) uint32

// anyNonFinite reports whether one of vs is NaN or ±Inf, eight values at a
// time where the CPU allows.
func anyNonFinite(vs []float32) bool {
	i := 0
	if haveAVX2 {
		if i = len(vs) &^ 7; i > 0 && nonFiniteAVX2(&vs[0], i) != 0 {
			return true
		}
	}
	return anyNonFiniteScalar(vs[i:])
}
