//go:build !amd64

package actor

const haveAVX2 = false

func expSumAVX2(w, x *float32, n int, max, invT float32) float64 { panic("no AVX2 kernel") }

func maxAVX2(x *float32, n int) float32 { panic("no AVX2 kernel") }
