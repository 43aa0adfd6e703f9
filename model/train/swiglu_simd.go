//go:build goexperiment.simd && amd64

package train

import "simd/archsimd"

// swigluForward32 is swigluForward's loop over the full 16-lane vectors of
// its slices with AVX-512 (none without); it returns how many elements it
// did.
func swigluForward32(g, u, sg, a []float32) int {
	if expLanes != 16 {
		return 0
	}
	k := newExp16k()
	i := 0
	for ; i+16 <= len(g); i += 16 {
		gv := archsimd.LoadFloat32x16Slice(g[i : i+16])
		s := k.one.Div(k.one.Add(k.exp(k.neg(gv))))
		s.StoreSlice(sg[i : i+16])
		gv.Mul(s).Mul(archsimd.LoadFloat32x16Slice(u[i : i+16])).StoreSlice(a[i : i+16])
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// swigluBackward32 is swigluBackward's loop as swigluForward32.
func swigluBackward32(g, u, sg, da, dg, du []float32) int {
	if expLanes != 16 {
		return 0
	}
	one := archsimd.BroadcastInt32x16(bits32(1)).AsFloat32x16()
	i := 0
	for ; i+16 <= len(g); i += 16 {
		gv := archsimd.LoadFloat32x16Slice(g[i : i+16])
		s := archsimd.LoadFloat32x16Slice(sg[i : i+16])
		d := archsimd.LoadFloat32x16Slice(da[i : i+16])
		uv := archsimd.LoadFloat32x16Slice(u[i : i+16])
		d.Mul(gv).Mul(s).StoreSlice(du[i : i+16])
		d.Mul(uv).Mul(s).Mul(one.Add(gv.Mul(one.Sub(s)))).StoreSlice(dg[i : i+16])
	}
	archsimd.ClearAVXUpperBits()
	return i
}
