//go:build !(goexperiment.simd && amd64)

package train

// swigluForward32 does nothing without the simd build (swigluForward's
// scalar loop does every element).
func swigluForward32(_, _, _, _ []float32) int { return 0 }

// swigluBackward32 does nothing without the simd build.
func swigluBackward32(_, _, _, _, _, _ []float32) int { return 0 }
