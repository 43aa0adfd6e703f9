//go:build !(goexperiment.simd && amd64)

package train

// useKernel is false: without GOEXPERIMENT=simd, sgemm uses gonum's Sgemm.
const useKernel = false

// kernelName says which GEMM path sgemm takes.
const kernelName = "gonum-blas32"

func kernel4x32(kc int, ap, bp []float32, c []float32, ldc int) {
	kernelGeneric(kc, ap, bp, c, ldc)
}
