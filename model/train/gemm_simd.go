//go:build goexperiment.simd && amd64

package train

import "simd/archsimd"

// useKernel is true when a vector tile kernel can run (AVX2 and FMA).
var useKernel = archsimd.X86.AVX2() && archsimd.X86.FMA()

// use512 selects the AVX-512 kernel.
var use512 = archsimd.X86.AVX512()

// kernelName says which GEMM path sgemm takes.
var kernelName = func() string {
	switch {
	case use512:
		return "simd-avx512"
	case useKernel:
		return "simd-avx2-fma"
	}
	return "gonum-blas32"
}()

// kernel4x32 computes c[4×32] += ap·bp (ap [kc][4], bp [kc][32]).
func kernel4x32(kc int, ap, bp []float32, c []float32, ldc int) {
	if use512 {
		kernel4x32AVX512(kc, ap, bp, c, ldc)
	} else {
		kernel4x16AVX2(kc, ap, bp, 0, c, ldc)
		kernel4x16AVX2(kc, ap, bp, 16, c[16:], ldc)
	}
	// Leave no dirty upper register halves behind: legacy-SSE code that
	// follows (math package assembly) otherwise runs many times slower.
	archsimd.ClearAVXUpperBits()
}

// kernel4x32AVX512 uses eight 16-wide accumulators.
func kernel4x32AVX512(kc int, ap, bp []float32, c []float32, ldc int) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x16
	for p := 0; p < kc; p++ {
		a := ap[p*4 : p*4+4 : p*4+4]
		b := bp[p*32 : p*32+32 : p*32+32]
		b0 := archsimd.LoadFloat32x16Slice(b[0:16])
		b1 := archsimd.LoadFloat32x16Slice(b[16:32])
		a0 := archsimd.BroadcastFloat32x16(a[0])
		c00 = b0.MulAdd(a0, c00)
		c01 = b1.MulAdd(a0, c01)
		a1 := archsimd.BroadcastFloat32x16(a[1])
		c10 = b0.MulAdd(a1, c10)
		c11 = b1.MulAdd(a1, c11)
		a2 := archsimd.BroadcastFloat32x16(a[2])
		c20 = b0.MulAdd(a2, c20)
		c21 = b1.MulAdd(a2, c21)
		a3 := archsimd.BroadcastFloat32x16(a[3])
		c30 = b0.MulAdd(a3, c30)
		c31 = b1.MulAdd(a3, c31)
	}
	store := func(row []float32, lo, hi archsimd.Float32x16) {
		archsimd.LoadFloat32x16Slice(row[0:16]).Add(lo).StoreSlice(row[0:16])
		archsimd.LoadFloat32x16Slice(row[16:32]).Add(hi).StoreSlice(row[16:32])
	}
	store(c[0:32], c00, c01)
	store(c[ldc:ldc+32], c10, c11)
	store(c[2*ldc:2*ldc+32], c20, c21)
	store(c[3*ldc:3*ldc+32], c30, c31)
}

// kernel4x16AVX2 computes c[4×16] += ap·bp[:, off:off+16] with eight 8-wide accumulators.
func kernel4x16AVX2(kc int, ap, bp []float32, off int, c []float32, ldc int) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8
	for p := 0; p < kc; p++ {
		a := ap[p*4 : p*4+4 : p*4+4]
		b := bp[p*32+off : p*32+off+16 : p*32+off+16]
		b0 := archsimd.LoadFloat32x8Slice(b[0:8])
		b1 := archsimd.LoadFloat32x8Slice(b[8:16])
		a0 := archsimd.BroadcastFloat32x8(a[0])
		c00 = b0.MulAdd(a0, c00)
		c01 = b1.MulAdd(a0, c01)
		a1 := archsimd.BroadcastFloat32x8(a[1])
		c10 = b0.MulAdd(a1, c10)
		c11 = b1.MulAdd(a1, c11)
		a2 := archsimd.BroadcastFloat32x8(a[2])
		c20 = b0.MulAdd(a2, c20)
		c21 = b1.MulAdd(a2, c21)
		a3 := archsimd.BroadcastFloat32x8(a[3])
		c30 = b0.MulAdd(a3, c30)
		c31 = b1.MulAdd(a3, c31)
	}
	store := func(row []float32, lo, hi archsimd.Float32x8) {
		archsimd.LoadFloat32x8Slice(row[0:8]).Add(lo).StoreSlice(row[0:8])
		archsimd.LoadFloat32x8Slice(row[8:16]).Add(hi).StoreSlice(row[8:16])
	}
	store(c[0:16], c00, c01)
	store(c[ldc:ldc+16], c10, c11)
	store(c[2*ldc:2*ldc+16], c20, c21)
	store(c[3*ldc:3*ldc+16], c30, c31)
}
