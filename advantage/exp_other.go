//go:build !amd64

package advantage

import "math"

// expInPlace replaces every x[i] by math.Exp(x[i]).
func expInPlace(x []float64) {
	for i := range x {
		x[i] = math.Exp(x[i])
	}
}
