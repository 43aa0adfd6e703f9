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
