package train

import (
	"math"
	"unsafe"

	"github.com/toolrl/toolrl/internal/fastmath"
)

// expF is exp in F. For float64 it is math.Exp. For float32 it is
// fastmath.Exp32, toolrl's one float32 exp (the actor's softmax uses it
// too), pure Go because math.Exp's amd64 assembly uses legacy SSE
// encodings, which run many times slower right after the AVX GEMM kernel
// (the AVX–SSE transition penalty). (float64 runs gonum's Dgemm, which leaves no dirty
// AVX state behind.) One function, so that the float32 path costs one call
// as it did before it was generic.
func expF[F Float](xf F) F {
	if !isFloat32[F]() {
		return F(math.Exp(float64(xf)))
	}
	return F(fastmath.Exp32(float32(xf)))
}

// exp32 is expF in float32.
func exp32(x float32) float32 { return expF(x) }

// isFloat32 reports whether F is float32 (a constant in each instantiation).
func isFloat32[F Float]() bool {
	var z F
	return unsafe.Sizeof(z) == 4
}

// expSlice sets x[i] = expF(x[i]) for every i: expSlice32 for float32
// (vectorised in the simd build, bit-identical to expF), math.Exp for
// float64.
func expSlice[F Float](x []F) {
	if x32, ok := any(x).([]float32); ok {
		expSlice32(x32)
		return
	}
	for i, v := range x {
		x[i] = expF(v)
	}
}
