package train

import (
	"testing"

	"gonum.org/v1/gonum/blas"
)

// BenchmarkSgemm4096x256x1024 measures gonum blas32 Sgemm on the product the
// issue names: [4096×256]·[256×1024]. GFLOP/s = 2·m·n·k / time.
func BenchmarkSgemm4096x256x1024(b *testing.B) {
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
		impl.Sgemm(blas.NoTrans, blas.NoTrans, m, n, k, 1, a, k, bb, n, 0, c, n)
	}
	b.ReportMetric(2*m*n*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkTrainerSgemm4096x256x1024 measures the trainer's sgemm on the same
// product (the packed simd kernel under GOEXPERIMENT=simd, else gonum).
func BenchmarkTrainerSgemm4096x256x1024(b *testing.B) {
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
		sgemm(false, false, m, n, k, 1, a, k, bb, n, 0, c, n)
	}
	b.ReportMetric(2*m*n*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	b.Logf("kernel %s", kernelName)
}

// BenchmarkTrainStep measures one forward+backward of the shipped config on
// 32 sequences of 60 tokens.
func BenchmarkTrainStep(b *testing.B) {
	m, err := NewModel(Config{Vocab: 640, Dim: 192, Layers: 4, Heads: 4, KVHeads: 4, FF: 512, MaxPos: 256, RopeTheta: 10000, NormEps: 1e-5}, 1)
	if err != nil {
		b.Fatal(err)
	}
	var seqs []Sequence
	for s := range 32 {
		seq := Sequence{}
		for t := range 60 {
			seq.Tokens = append(seq.Tokens, int32((s*7+t*13)%640))
			seq.LossMask = append(seq.LossMask, uint8(t/35))
		}
		seqs = append(seqs, seq)
	}
	b.ResetTimer()
	for range b.N {
		if _, _, err := m.Step(seqs); err != nil {
			b.Fatal(err)
		}
	}
}
