package train

import (
	"math"
	"testing"

	"github.com/toolrl/toolrl/internal/fastmath"
)

// TestExpSliceMatchesExp32: expSlice32, at every lane count the CPU runs
// (16 and 8 in the simd build), is bit-identical to fastmath.Exp32 on every
// 263rd float32 bit pattern (both signs, NaNs and infinities included) and
// on the edges, at every tail length.
func TestExpSliceMatchesExp32(t *testing.T) {
	for _, lanes := range expLaneChoices() {
		t.Logf("%d lanes", lanes)
		expSliceMatches(t, lanes)
	}
}

func expSliceMatches(t *testing.T, lanes int) {
	var xs []float32
	for b := uint64(0); b < 1<<32; b += 263 {
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	xs = append(xs, -86, -86.0001, -85.9999, 88, 88.0001, 87.9999, 0, float32(math.Copysign(0, -1)),
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-30, -1e-30)
	got := append([]float32{}, xs...)
	expSliceLanes(got, lanes)
	bad := 0
	for i, x := range xs {
		want := fastmath.Exp32(x)
		if math.Float32bits(got[i]) != math.Float32bits(want) && !(want != want && got[i] != got[i]) {
			if bad < 5 {
				t.Errorf("%d lanes: exp(%g [%#08x]) = %g [%#08x], Exp32 gives %g [%#08x]", lanes, x, math.Float32bits(x), got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d lanes: %d of %d values differ", lanes, bad, len(xs))
	}
	for n := range 40 { // every tail length, vector and scalar parts
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i)*0.37 - 7
		}
		expSliceLanes(x, lanes)
		for i, v := range x {
			if want := fastmath.Exp32(float32(i)*0.37 - 7); v != want {
				t.Fatalf("%d lanes, length %d: x[%d] = %g, want %g", lanes, n, i, v, want)
			}
		}
	}
}
