package train

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// impl is gonum's pure-Go BLAS; its Sgemm and Dgemm split large products
// over goroutines by output block, each block summed in a fixed order, so
// results do not depend on scheduling.
var impl gonum.Implementation

// gemm computes c = alpha·op(a)·op(b) + beta·c (BLAS semantics, row-major)
// in F: sgemm (OpenBLAS when loaded, else the packed SIMD kernel when built
// with it, else gonum's Sgemm) for float32, gonum's Dgemm for float64. Calls
// through OpenBLAS are serialised; workers that run at once call gemmInWorker.
func gemm[F Float](tA, tB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	switch a := any(a).(type) {
	case []float32:
		sgemm(tA, tB, m, n, k, float32(alpha), a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	case []float64:
		impl.Dgemm(trans(tA), trans(tB), m, n, k, float64(alpha), a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	}
}

// gemmInWorker is gemm for calls from goroutines that run at once (the
// per-sequence attention workers): always the pure-Go sgemm, which any number
// of callers may run together, on the calling goroutine, packing into the
// worker's own sc.
func gemmInWorker[F Float](sc *packScratch, tA, tB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	switch a := any(a).(type) {
	case []float32:
		sgemmGoWith(sc, tA, tB, m, n, k, float32(alpha), a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	case []float64:
		impl.Dgemm(trans(tA), trans(tB), m, n, k, float64(alpha), a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	}
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// linear computes y = x·wᵀ for x [n, in] and w [out, in] (PyTorch Linear).
func linear[F Float](y, x, w []F, n, in, out int) {
	gemm(false, true, n, out, in, 1, x, in, w, in, 0, y, out)
}

// linearBack accumulates dw += dyᵀ·x and sets (beta 0) or adds (beta 1) dx = dy·w.
func linearBack[F Float](dx, dw, dy, x, w []F, n, in, out int, beta F) {
	gemm(true, false, out, in, n, 1, dy, out, x, in, 1, dw, in)
	if dx != nil {
		gemm(false, false, n, in, out, 1, dy, out, w, in, beta, dx, in)
	}
}
