package advantage

import (
	"math"

	"golang.org/x/sys/cpu"
)

// haveExpFMA4 selects expFMA4 for expInPlace: on a CPU with AVX2 and FMA,
// where math.Exp takes the FMA path that expFMA4 reproduces lane by lane.
var haveExpFMA4 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// expFMA4 writes dst[i] = math.Exp(src[i]) for i < n (a multiple of 4),
// bit for bit, for |src[i]| ≤ 700.
//
//go:noescape
func expFMA4(dst, src *float64, n int)

// expInPlace replaces every x[i] (|x[i]| ≤ 700) by math.Exp(x[i]), bit for
// bit, four at a time where the CPU allows.
func expInPlace(x []float64) {
	i := 0
	if haveExpFMA4 {
		if i = len(x) &^ 3; i > 0 {
			expFMA4(&x[0], &x[0], i)
		}
	}
	for ; i < len(x); i++ {
		x[i] = math.Exp(x[i])
	}
}
