package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/toolrl/toolrl/internal/fastmath"
)

// TestSwiGLUBitIdentical: swigluForward and swigluBackward (16 lanes in the
// simd build on AVX-512, in parallel chunks) give bit for bit the scalar
// formulas, at lengths that leave every tail and split into several chunks,
// with |g| up to 100 (exp's underflow and overflow branches).
func TestSwiGLUBitIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 15, 16, 17, 33, 1000, 3*minChunk + 5} {
		g, u, da := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range g {
			g[i] = float32(r.NormFloat64() * 3)
			if i%97 == 0 {
				g[i] = float32(r.Float64()*200 - 100)
			}
			u[i], da[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		sg, a, dg, du := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		swigluForward(g, u, sg, a)
		swigluBackward(g, u, sg, da, dg, du)
		for i := range g {
			s := 1 / (1 + fastmath.Exp32(-g[i]))
			want := [4]float32{s, g[i] * s * u[i], da[i] * u[i] * s * (1 + g[i]*(1-s)), da[i] * g[i] * s}
			got := [4]float32{sg[i], a[i], dg[i], du[i]}
			for k := range want {
				if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
					t.Fatalf("n %d, element %d (g %g): output %d is %g, want %g", n, i, g[i], k, got[k], want[k])
				}
			}
		}
	}
}
