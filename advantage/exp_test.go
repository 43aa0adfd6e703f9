package advantage

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpInPlaceIsMathExp checks expInPlace against math.Exp bit for bit:
// over the k3 range (log-ratios clamped to ±LogRatioClamp), around the
// rounding boundaries of its range reduction (multiples of ln2/2), at
// zeros, and in slices of every length mod 4 (the vector body and the
// scalar tail).
func TestExpInPlaceIsMathExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var xs []float64
	for range 200_000 {
		xs = append(xs, (2*rng.Float64()-1)*LogRatioClamp)
	}
	for range 20_000 { // small log-ratios, the common case
		xs = append(xs, (2*rng.Float64()-1)*1e-3)
	}
	for k := -60; k <= 60; k++ {
		b := float64(k) * math.Ln2 / 2
		xs = append(xs, b, math.Nextafter(b, math.Inf(1)), math.Nextafter(b, math.Inf(-1)))
	}
	xs = append(xs, 0, math.Copysign(0, -1), 1e-300, -1e-300, 700, -700, LogRatioClamp, -LogRatioClamp)
	for n := 0; n <= 9; n++ { // every tail length
		xs = append(xs, xs[:n]...)
	}
	got := append([]float64(nil), xs...)
	expInPlace(got)
	for i, x := range xs {
		if want := math.Exp(x); math.Float64bits(got[i]) != math.Float64bits(want) {
			t.Fatalf("expInPlace(%v) = %v (%#x), math.Exp gives %v (%#x)", x, got[i], math.Float64bits(got[i]), want, math.Float64bits(want))
		}
	}
	for n := 0; n <= 9; n++ {
		in := append([]float64(nil), xs[100:100+n]...)
		expInPlace(in)
		for i, v := range in {
			if want := math.Exp(xs[100+i]); v != want {
				t.Fatalf("length %d: [%d] = %v, want %v", n, i, v, want)
			}
		}
	}
}

func BenchmarkExpInPlace(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, 64)
	for i := range x {
		x[i] = (2*rng.Float64() - 1) * 0.1
	}
	buf := make([]float64, len(x))
	b.Run("vector", func(b *testing.B) {
		for b.Loop() {
			copy(buf, x)
			expInPlace(buf)
		}
	})
	b.Run("math.Exp", func(b *testing.B) {
		for b.Loop() {
			copy(buf, x)
			for i := range buf {
				buf[i] = math.Exp(buf[i])
			}
		}
	})
}
