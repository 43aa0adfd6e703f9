package advantage

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/toolrl/toolrl/traj"
)

// klTermRef is KLTerm as first written (the builtins min and max): the
// faster clamp and the chunked loop must give the same bits.
func klTermRef(e KLEstimator, logp, refLogp float64) float64 {
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

// sameBits32 and sameBits64 compare bits; any NaN equals any NaN (which NaN
// min and max return is not specified).
func sameBits32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || math.IsNaN(float64(a)) && math.IsNaN(float64(b))
}

func sameBits64(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(float64(a)) && math.IsNaN(float64(b))
}

// KLTerm and tokenKL (Compute's per-token loop) agree bit for bit with the
// reference on random log-probabilities, the clamps' edges, zeros of both
// signs, infinities and NaN, for every estimator and lengths around the
// chunk size.
func TestTokenKLBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	special := []float32{0, float32(math.Copysign(0, -1)), -20, -20.000002, -40, -1e-30, -1e30,
		float32(math.Inf(-1)), float32(math.Inf(1)), float32(math.NaN()), -7.5, -0.5}
	for _, e := range []KLEstimator{KLK1, KLK2, KLK3, KLNone} {
		for _, n := range []int{0, 1, 63, 64, 65, 200, 513} {
			logp, ref, mask := make([]float32, n), make([]float32, n), make(traj.Mask, n)
			for j := range n {
				logp[j], ref[j] = -float32(rng.ExpFloat64()*3), -float32(rng.ExpFloat64()*3)
				if rng.IntN(5) == 0 {
					logp[j] = special[rng.IntN(len(special))]
				}
				if rng.IntN(5) == 0 {
					ref[j] = special[rng.IntN(len(special))]
				}
				mask[j] = uint8(rng.IntN(4)/3 ^ 1) // mostly 1
			}
			kl := make([]float32, n)
			tokenKL(e, kl, logp, ref, mask)
			for j := range n {
				want := float32(0)
				if mask[j] == 1 {
					want = float32(klTermRef(e, float64(logp[j]), float64(ref[j])))
				}
				if !sameBits32(kl[j], want) {
					t.Fatalf("%s n=%d [%d] (logp %v, ref %v, mask %d): %v, want %v", e, n, j, logp[j], ref[j], mask[j], kl[j], want)
				}
				got, ref64 := KLTerm(e, float64(logp[j]), float64(ref[j])), klTermRef(e, float64(logp[j]), float64(ref[j]))
				if !sameBits64(got, ref64) {
					t.Fatalf("KLTerm(%s, %v, %v) = %v, want %v", e, logp[j], ref[j], got, ref64)
				}
			}
		}
	}
}
