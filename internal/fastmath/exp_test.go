package fastmath

import (
	"math"
	"testing"
)

// Exp32 is within 1 ulp of the correctly rounded exp over a dense sample
// of [−86, 88) (every 997th float32; the whole range was measured once, see
// Exp32), 0 below −86 and +Inf above 88.
func TestExp32(t *testing.T) {
	worst := int64(0)
	// Stepping the bit pattern steps through consecutive float32 (0x80000000
	// is -0): toward 0
	// for negative x, away from it for positive x.
	check := func(x float32) {
		got, want := Exp32(x), float32(math.Exp(float64(x)))
		d := int64(math.Float32bits(got)) - int64(math.Float32bits(want))
		worst = max(worst, d, -d)
	}
	for b := math.Float32bits(-86); b > 0x80000000; b -= 997 {
		check(math.Float32frombits(b))
	}
	for b := uint32(0); math.Float32frombits(b) < 88; b += 997 {
		check(math.Float32frombits(b))
	}
	if worst > 1 {
		t.Errorf("worst error %d ulp, want ≤ 1", worst)
	}
	if Exp32(-86.5) != 0 || Exp32(-1000) != 0 || !math.IsInf(float64(Exp32(89)), 1) || Exp32(0) != 1 {
		t.Errorf("edges: exp(-86.5)=%v exp(-1000)=%v exp(89)=%v exp(0)=%v", Exp32(-86.5), Exp32(-1000), Exp32(89), Exp32(0))
	}
}
