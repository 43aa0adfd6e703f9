package train

import (
	"testing"

	"gonum.org/v1/gonum/blas"
)

// benchSgemm4096x256x1024 times mul on the product the issue names,
// [4096×256]·[256×1024], and reports GFLOP/s = 2·m·n·k / time.
func benchSgemm4096x256x1024(b *testing.B, mul func(m, n, k int, a, bb, c []float32)) {
	const m, k, n = 4096, 256, 1024
	a, bb, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for i := range a {
		a[i] = float32(i%7) * 0.1
	}
	for i := range bb {
		bb[i] = float32(i%5) * 0.1
	}
	b.ResetTimer()
	for range b.N {
		mul(m, n, k, a, bb, c)
	}
	b.ReportMetric(2*m*n*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkSgemm4096x256x1024 measures gonum blas32 Sgemm on that product.
func BenchmarkSgemm4096x256x1024(b *testing.B) {
	benchSgemm4096x256x1024(b, func(m, n, k int, a, bb, c []float32) {
		impl.Sgemm(blas.NoTrans, blas.NoTrans, m, n, k, 1, a, k, bb, n, 0, c, n)
	})
}

// BenchmarkTrainerSgemm4096x256x1024 measures the trainer's sgemm on the same
// product (the packed simd kernel under GOEXPERIMENT=simd, else gonum).
func BenchmarkTrainerSgemm4096x256x1024(b *testing.B) {
	benchSgemm4096x256x1024(b, func(m, n, k int, a, bb, c []float32) {
		sgemm(false, false, m, n, k, 1, a, k, bb, n, 0, c, n)
	})
	b.Logf("kernel %s", kernelName)
}

// BenchmarkSgemmLearnerShapes times the products of one models/calc update
// (4,232 packed tokens, dim 128, MLP 256, vocabulary 640; 2,216 trained
// rows) through the pure-Go kernel and through OpenBLAS (when one loads), in
// one run: forward x·wᵀ, the input gradient dy·w, and the weight gradient
// dyᵀ·x (transposed A, k = 4,232).
func BenchmarkSgemmLearnerShapes(b *testing.B) {
	type shape struct {
		name    string
		tA, tB  bool
		m, n, k int
	}
	shapes := []shape{
		{"forward-4232x256x128", false, true, 4232, 256, 128},
		{"input-grad-4232x128x256", false, false, 4232, 128, 256},
		{"weight-grad-128x128x4232", true, false, 128, 128, 4232},
		{"weight-grad-256x128x4232", true, false, 256, 128, 4232},
		{"head-2216x640x128", false, true, 2216, 640, 128},
		{"head-weight-grad-640x128x2216", true, false, 640, 128, 2216},
	}
	backends := []struct {
		name string
		mul  func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	}{{"go-" + kernelName, sgemmGo}}
	if lib := loadedBLAS(); lib != nil {
		backends = append(backends, struct {
			name string
			mul  func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
		}{"openblas", lib.Sgemm})
		b.Logf("openblas: %s", lib.Describe())
	}
	for _, s := range shapes {
		a, bb, c := make([]float32, s.m*s.k), make([]float32, s.k*s.n), make([]float32, s.m*s.n)
		for i := range a {
			a[i] = float32(i%7) * 0.1
		}
		for i := range bb {
			bb[i] = float32(i%5) * 0.1
		}
		lda, ldb := s.k, s.n
		if s.tA {
			lda = s.m
		}
		if s.tB {
			ldb = s.k
		}
		for _, be := range backends {
			b.Run(s.name+"/"+be.name, func(b *testing.B) {
				// One untimed call: OpenMP starts its threads on the first.
				be.mul(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 1, c, s.n)
				b.ResetTimer()
				for range b.N {
					be.mul(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 1, c, s.n)
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
