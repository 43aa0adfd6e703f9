package actor

import "golang.org/x/sys/cpu"

// haveAVX2 selects the vector kernels of expsum_amd64.s. It is fixed at
// start-up by the CPU.
var haveAVX2 = cpu.X86.HasAVX2

// expSumAVX2 writes w[i] = expf((x[i]-max)*invT) for i < n (n a multiple of
// 8) and returns their float64 sum.
//
//go:noescape
func expSumAVX2(w, x *float32, n int, max, invT float32) float64

// maxAVX2 returns the largest of x[0:n] (n a multiple of 8, at least 8).
//
//go:noescape
func maxAVX2(x *float32, n int) float32
