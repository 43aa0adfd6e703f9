package train

// swigluForward sets sg[i] = sigmoid(g[i]) = 1/(1 + exp(−g[i])) and
// a[i] = g[i]·sg[i]·u[i] (SwiGLU's silu(g)·u, the sigmoid kept for the
// backward pass), in parallel chunks; float32 runs 16 lanes at a time where
// the simd build has AVX-512, with the same operations in the same order
// (bit-identical).
func swigluForward[F Float](g, u, sg, a []F) {
	parallelRange(len(g), minChunk, func(lo, hi int) {
		i := lo
		if g32, ok := any(g).([]float32); ok {
			i += swigluForward32(g32[lo:hi], any(u).([]float32)[lo:hi], any(sg).([]float32)[lo:hi], any(a).([]float32)[lo:hi])
		}
		for j := i; j < hi; j++ {
			sg[j] = -g[j]
		}
		expSlice(sg[i:hi])
		for ; i < hi; i++ {
			g := g[i]
			s := 1 / (1 + sg[i])
			sg[i] = s
			a[i] = g * s * u[i]
		}
	})
}

// swigluBackward sets, from da = dL/da and the forward's g, u and
// s = sigmoid(g): du = da·g·s and dg = da·u·s·(1 + g·(1 − s)), in parallel
// chunks (16 lanes at a time as swigluForward).
func swigluBackward[F Float](g, u, sg, da, dg, du []F) {
	parallelRange(len(g), minChunk, func(lo, hi int) {
		i := lo
		if g32, ok := any(g).([]float32); ok {
			i += swigluBackward32(g32[lo:hi], any(u).([]float32)[lo:hi], any(sg).([]float32)[lo:hi],
				any(da).([]float32)[lo:hi], any(dg).([]float32)[lo:hi], any(du).([]float32)[lo:hi])
		}
		for ; i < hi; i++ {
			g, s := g[i], sg[i]
			du[i] = da[i] * g * s
			dg[i] = da[i] * u[i] * s * (1 + g*(1-s))
		}
	})
}
