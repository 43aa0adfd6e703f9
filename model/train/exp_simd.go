//go:build goexperiment.simd && amd64

package train

import (
	"math"
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
		i = exp16(x)
		// Leave no dirty upper register halves behind (see kernel4x32).
		archsimd.ClearAVXUpperBits()
	case 8:
		i = exp8(x)
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

// bits32 is the bit pattern of a float32 constant. The vector constants are
// broadcast from these through a general register: a float32 broadcast
// would pass through a legacy-SSE move, which stalls while upper register
// halves are dirty.
func bits32(f float32) int32 { return int32(math.Float32bits(f)) }

// exp16k holds fastmath.Exp32's constants in 16-lane vectors.
type exp16k struct {
	lo, hi, zero, inf, one                       archsimd.Float32x16
	log2e, magic, c1, c2, p0, p1, p2, p3, p4, p5 archsimd.Float32x16
	bias, sign                                   archsimd.Int32x16
}

func newExp16k() *exp16k {
	b := func(f float32) archsimd.Float32x16 { return archsimd.BroadcastInt32x16(bits32(f)).AsFloat32x16() }
	return &exp16k{
		lo: b(-86), hi: b(88), zero: b(0), inf: b(inf32()), one: b(1),
		log2e: b(expLog2e), magic: b(expMagic), c1: b(expC1), c2: b(expC2),
		p0: b(expP0), p1: b(expP1), p2: b(expP2), p3: b(expP3), p4: b(expP4), p5: b(expP5),
		bias: archsimd.BroadcastInt32x16(0x4B400000), sign: archsimd.BroadcastInt32x16(-1 << 31),
	}
}

// exp is fastmath.Exp32 in every lane of v.
func (k *exp16k) exp(v archsimd.Float32x16) archsimd.Float32x16 {
	under, over := v.Less(k.lo), v.Greater(k.hi)
	t := v.Mul(k.log2e).Add(k.magic)
	z := t.Sub(k.magic)
	n := t.AsInt32x16().Sub(k.bias)
	r := v.Sub(z.Mul(k.c1)).Sub(z.Mul(k.c2))
	p := k.p0.Mul(r).Add(k.p1)
	p = p.Mul(r).Add(k.p2)
	p = p.Mul(r).Add(k.p3)
	p = p.Mul(r).Add(k.p4)
	p = p.Mul(r).Add(k.p5)
	y := p.Mul(r).Mul(r).Add(r).Add(k.one)
	e := y.AsInt32x16().Add(n.ShiftAllLeft(23)).AsFloat32x16()
	e = k.zero.Merge(e, under)
	return k.inf.Merge(e, over)
}

// neg is −v (the sign bit flipped, as Go's unary minus).
func (k *exp16k) neg(v archsimd.Float32x16) archsimd.Float32x16 {
	return v.AsInt32x16().Xor(k.sign).AsFloat32x16()
}

// exp16 exps the full 16-lane vectors of x in place and returns how many
// elements it did.
func exp16(x []float32) int {
	k := newExp16k()
	i := 0
	for ; i+16 <= len(x); i += 16 {
		s := x[i : i+16]
		k.exp(archsimd.LoadFloat32x16Slice(s)).StoreSlice(s)
	}
	return i
}

// exp8 is exp16 with 8 lanes (AVX2).
func exp8(x []float32) int {
	b := func(f float32) archsimd.Float32x8 { return archsimd.BroadcastInt32x8(bits32(f)).AsFloat32x8() }
	lo, hi, zero, inf := b(-86), b(88), b(0), b(inf32())
	log2e, magic, c1, c2, one := b(expLog2e), b(expMagic), b(expC1), b(expC2), b(1)
	p0, p1, p2, p3, p4, p5 := b(expP0), b(expP1), b(expP2), b(expP3), b(expP4), b(expP5)
	bias := archsimd.BroadcastInt32x8(0x4B400000)
	i := 0
	for ; i+8 <= len(x); i += 8 {
		s := x[i : i+8]
		v := archsimd.LoadFloat32x8Slice(s)
		under, over := v.Less(lo), v.Greater(hi)
		t := v.Mul(log2e).Add(magic)
		z := t.Sub(magic)
		n := t.AsInt32x8().Sub(bias)
		r := v.Sub(z.Mul(c1)).Sub(z.Mul(c2))
		p := p0.Mul(r).Add(p1)
		p = p.Mul(r).Add(p2)
		p = p.Mul(r).Add(p3)
		p = p.Mul(r).Add(p4)
		p = p.Mul(r).Add(p5)
		y := p.Mul(r).Mul(r).Add(r).Add(one)
		e := y.AsInt32x8().Add(n.ShiftAllLeft(23)).AsFloat32x8()
		e = zero.Merge(e, under)
		e = inf.Merge(e, over)
		e.StoreSlice(s)
	}
	return i
}

// inf32 is +Inf in float32.
func inf32() float32 { return float32(math.Inf(1)) }
