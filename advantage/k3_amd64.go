package advantage

import (
	"golang.org/x/sys/cpu"

	"github.com/toolrl/toolrl/traj"
)

// haveK3AVX2 selects k3AVX2 for tokenK3: on a CPU with AVX2 and FMA, where
// math.Exp takes the FMA path that its exp reproduces lane by lane.
var haveK3AVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// k3AVX2 writes kl[j] = float32(klK3(logp[j], ref[j])) (klK3 with the
// clamps given) where mask[j] is 1, and +0 elsewhere, for j < n (a multiple
// of 4), bit for bit (a NaN for a NaN).
//
//go:noescape
func k3AVX2(kl, logp, ref *float32, mask *uint8, n int, ratioClamp, k3Clamp float64)

// tokenK3 is tokenKL for k3: kl[j] = float32(klK3(logp[j], ref[j])) where
// mask[j] is 1 and 0 elsewhere (all four have len(mask) entries), four
// tokens at a time where the CPU allows.
func tokenK3(kl, logp, ref []float32, mask traj.Mask) {
	i := 0
	if haveK3AVX2 {
		if i = len(mask) &^ 3; i > 0 {
			k3AVX2(&kl[0], &logp[0], &ref[0], &mask[0], i, LogRatioClamp, K3Clamp)
		}
	}
	tokenK3Scalar(kl[i:], logp[i:], ref[i:], mask[i:])
}
