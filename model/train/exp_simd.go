//go:build goexperiment.simd && amd64

package train

import (
	"simd/archsimd"

	"github.com/toolrl/toolrl/internal/fastmath"
)

// expLanes is how many lanes expSlice32 runs: 16 with AVX-512, 8 with
// AVX2, else 1 (scalar).
var expLanes = func() int {
	switch {
	case use512:
		return 16
	case archsimd.X86.AVX2():
		return 8
	}
	return 1
}()

// expLaneChoices are the lane counts this CPU can run (for tests).
func expLaneChoices() []int {
	switch expLanes {
	case 16:
		return []int{1, 8, 16}
	case 8:
		return []int{1, 8}
	}
	return []int{1}
}

// expSlice32 sets x[i] = fastmath.Exp32(x[i]) for every i, bit for bit: the
// same operations (Cephes' reduction and polynomial, no fused multiply-add,
// 2^n added into the exponent bits, 0 below −86 and +Inf above 88) 16
// lanes at a time with AVX-512, 8 with AVX2, the tail scalar.
func expSlice32(x []float32) { expSliceLanes(x, expLanes) }

func expSliceLanes(x []float32, lanes int) {
	i := 0
	switch lanes {
	case 16:
		for ; i+16 <= len(x); i += 16 {
			exp16(x[i : i+16])
		}
		// Leave no dirty upper register halves behind (see kernel4x32).
		archsimd.ClearAVXUpperBits()
	case 8:
		for ; i+8 <= len(x); i += 8 {
			exp8(x[i : i+8])
		}
		archsimd.ClearAVXUpperBits()
	}
	for ; i < len(x); i++ {
		x[i] = fastmath.Exp32(x[i])
	}
}

// The constants of fastmath.Exp32, as float32.
const (
	expLog2e = float32(1.44269504088896341)
	expC1    = float32(0.693359375)
	expC2    = float32(-2.12194440e-4)
	expMagic = float32(12582912) // 1.5 * 2^23
	expP0    = float32(1.9875691500e-4)
	expP1    = float32(1.3981999507e-3)
	expP2    = float32(8.3334519073e-3)
	expP3    = float32(4.1665795894e-2)
	expP4    = float32(1.6666665459e-1)
	expP5    = float32(5.0000001201e-1)
)

func exp16(s []float32) {
	b := archsimd.BroadcastFloat32x16
	x := archsimd.LoadFloat32x16Slice(s)
	under, over := x.Less(b(-86)), x.Greater(b(88))
	magic := b(expMagic)
	t := x.Mul(b(expLog2e)).Add(magic)
	z := t.Sub(magic)
	n := t.AsInt32x16().Sub(archsimd.BroadcastInt32x16(0x4B400000))
	r := x.Sub(z.Mul(b(expC1))).Sub(z.Mul(b(expC2)))
	p := b(expP0)
	p = p.Mul(r).Add(b(expP1))
	p = p.Mul(r).Add(b(expP2))
	p = p.Mul(r).Add(b(expP3))
	p = p.Mul(r).Add(b(expP4))
	p = p.Mul(r).Add(b(expP5))
	y := p.Mul(r).Mul(r).Add(r).Add(b(1))
	e := y.AsInt32x16().Add(n.ShiftAllLeft(23)).AsFloat32x16()
	e = b(0).Merge(e, under)
	e = b(float32(inf32())).Merge(e, over)
	e.StoreSlice(s)
}

func exp8(s []float32) {
	b := archsimd.BroadcastFloat32x8
	x := archsimd.LoadFloat32x8Slice(s)
	under, over := x.Less(b(-86)), x.Greater(b(88))
	magic := b(expMagic)
	t := x.Mul(b(expLog2e)).Add(magic)
	z := t.Sub(magic)
	n := t.AsInt32x8().Sub(archsimd.BroadcastInt32x8(0x4B400000))
	r := x.Sub(z.Mul(b(expC1))).Sub(z.Mul(b(expC2)))
	p := b(expP0)
	p = p.Mul(r).Add(b(expP1))
	p = p.Mul(r).Add(b(expP2))
	p = p.Mul(r).Add(b(expP3))
	p = p.Mul(r).Add(b(expP4))
	p = p.Mul(r).Add(b(expP5))
	y := p.Mul(r).Mul(r).Add(r).Add(b(1))
	e := y.AsInt32x8().Add(n.ShiftAllLeft(23)).AsFloat32x8()
	e = b(0).Merge(e, under)
	e = b(float32(inf32())).Merge(e, over)
	e.StoreSlice(s)
}
