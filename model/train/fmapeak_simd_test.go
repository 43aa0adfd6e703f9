//go:build goexperiment.simd && amd64

package train

import (
	"runtime"
	"sync"
	"testing"

	"simd/archsimd"
)

// BenchmarkFMAPeak measures this machine's float32 FMA peak: GOMAXPROCS
// goroutines, each running 12 independent AVX-512 (or, without AVX-512, 12
// AVX2) fused multiply-add chains, enough to cover the FMA latency on two
// ports, on registers only. GFLOP/s counts 2 FLOP per lane per FMA. It is
// the ceiling that `make bench-learner-peer` states the learner's rate
// against.
func BenchmarkFMAPeak(b *testing.B) {
	if !archsimd.X86.FMA() {
		b.Skip("no FMA")
	}
	const inner = 1 << 20
	workers := runtime.GOMAXPROCS(0)
	lanes := 8
	if archsimd.X86.AVX512() {
		lanes = 16
	}
	sink := make([]float32, workers)
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if lanes == 16 {
					sink[w] = fmaChains512(inner)
				} else {
					sink[w] = fmaChains256(inner)
				}
			}()
		}
		wg.Wait()
	}
	flop := 2 * 12 * float64(lanes) * inner * float64(workers) * float64(b.N)
	b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	b.Logf("%d goroutines, %d-lane FMA, sink %v", workers, lanes, sink[0])
}

func fmaChains512(n int) float32 {
	x := archsimd.BroadcastFloat32x16(0.999999)
	y := archsimd.BroadcastFloat32x16(1e-7)
	// Distinct starting values, so that no two chains are the same value
	// the compiler could compute once.
	c := func(i float32) archsimd.Float32x16 { return archsimd.BroadcastFloat32x16(i) }
	c0, c1, c2, c3, c4, c5 := c(1), c(2), c(3), c(4), c(5), c(6)
	c6, c7, c8, c9, c10, c11 := c(7), c(8), c(9), c(10), c(11), c(12)
	for range n {
		c0, c1, c2, c3 = c0.MulAdd(x, y), c1.MulAdd(x, y), c2.MulAdd(x, y), c3.MulAdd(x, y)
		c4, c5, c6, c7 = c4.MulAdd(x, y), c5.MulAdd(x, y), c6.MulAdd(x, y), c7.MulAdd(x, y)
		c8, c9, c10, c11 = c8.MulAdd(x, y), c9.MulAdd(x, y), c10.MulAdd(x, y), c11.MulAdd(x, y)
	}
	s := c0.Add(c1).Add(c2).Add(c3).Add(c4).Add(c5).Add(c6).Add(c7).Add(c8).Add(c9).Add(c10).Add(c11)
	var out [16]float32
	s.StoreSlice(out[:])
	archsimd.ClearAVXUpperBits()
	return out[0]
}

func fmaChains256(n int) float32 {
	x := archsimd.BroadcastFloat32x8(0.999999)
	y := archsimd.BroadcastFloat32x8(1e-7)
	// Distinct starting values, so that no two chains are the same value
	// the compiler could compute once.
	c := func(i float32) archsimd.Float32x8 { return archsimd.BroadcastFloat32x8(i) }
	c0, c1, c2, c3, c4, c5 := c(1), c(2), c(3), c(4), c(5), c(6)
	c6, c7, c8, c9, c10, c11 := c(7), c(8), c(9), c(10), c(11), c(12)
	for range n {
		c0, c1, c2, c3 = c0.MulAdd(x, y), c1.MulAdd(x, y), c2.MulAdd(x, y), c3.MulAdd(x, y)
		c4, c5, c6, c7 = c4.MulAdd(x, y), c5.MulAdd(x, y), c6.MulAdd(x, y), c7.MulAdd(x, y)
		c8, c9, c10, c11 = c8.MulAdd(x, y), c9.MulAdd(x, y), c10.MulAdd(x, y), c11.MulAdd(x, y)
	}
	s := c0.Add(c1).Add(c2).Add(c3).Add(c4).Add(c5).Add(c6).Add(c7).Add(c8).Add(c9).Add(c10).Add(c11)
	var out [8]float32
	s.StoreSlice(out[:])
	archsimd.ClearAVXUpperBits()
	return out[0]
}
