package actor

import "github.com/toolrl/toolrl/internal/fastmath"

// expf is the softmax's float32 exp: fastmath.Exp32, toolrl's one kernel
// (expSumAVX2 computes the same values eight at a time).
func expf(x float32) float32 { return fastmath.Exp32(x) }
