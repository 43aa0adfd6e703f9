package train

import "gonum.org/v1/gonum/blas/gonum"

// impl is gonum's pure-Go BLAS; its Sgemm splits large products over
// goroutines by output block, each block summed in a fixed order, so results
// do not depend on scheduling.
var impl gonum.Implementation

// linear computes y = x·wᵀ for x [n, in] and w [out, in] (PyTorch Linear).
func linear(y, x, w []float32, n, in, out int) {
	sgemm(false, true, n, out, in, 1, x, in, w, in, 0, y, out)
}

// linearBack accumulates dw += dyᵀ·x and sets (beta 0) or adds (beta 1) dx = dy·w.
func linearBack(dx, dw, dy, x, w []float32, n, in, out int, beta float32) {
	sgemm(true, false, out, in, n, 1, dy, out, x, in, 1, dw, in)
	if dx != nil {
		sgemm(false, false, n, in, out, 1, dy, out, w, in, beta, dx, in)
	}
}
