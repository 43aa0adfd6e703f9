package train

import (
	"math"
	"unsafe"
)

// expF is exp in F. For float64 it is math.Exp. For float32 it is exp32's
// pure-Go polynomial, accurate to a few float32 ulps for the activations and
// softmax inputs the trainer sees; it exists because math.Exp's amd64
// assembly uses legacy SSE encodings, which run many times slower right
// after the AVX GEMM kernel (the AVX–SSE transition penalty); plain Go code
// does not hit that path. (float64 runs gonum's Dgemm, which leaves no dirty
// AVX state behind.) One function, so that the float32 path costs one call
// as it did before it was generic.
func expF[F Float](xf F) F {
	if !isFloat32[F]() {
		return F(math.Exp(float64(xf)))
	}
	x := float32(xf)
	if x > 88 {
		return F(math.Inf(1))
	}
	if x < -87 {
		return 0
	}
	// exp(x) = 2^n · exp(r), r = x − n·ln2 in [−ln2/2, ln2/2]
	const ln2hi, ln2lo, log2e = 0.693359375, -2.12194440e-4, 1.44269504088896341
	n := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - n*ln2hi - n*ln2lo
	// Taylor/minimax polynomial of degree 6 (Cephes expf coefficients).
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	e := p*r*r + r + 1
	return F(e * math.Float32frombits(uint32(int32(n)+127)<<23))
}

// exp32 is expF in float32.
func exp32(x float32) float32 { return expF(x) }

// isFloat32 reports whether F is float32 (a constant in each instantiation).
func isFloat32[F Float]() bool {
	var z F
	return unsafe.Sizeof(z) == 4
}
