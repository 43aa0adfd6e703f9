//go:build !(goexperiment.simd && amd64)

package train

import "github.com/toolrl/toolrl/internal/fastmath"

// expSlice32 sets x[i] = fastmath.Exp32(x[i]) for every i (the simd build
// runs it 8 or 16 lanes at a time, bit for bit the same).
func expSlice32(x []float32) { expSliceLanes(x, 1) }

// expLaneChoices are the lane counts this build can run (for tests).
func expLaneChoices() []int { return []int{1} }

func expSliceLanes(x []float32, _ int) {
	for i, v := range x {
		x[i] = fastmath.Exp32(v)
	}
}
