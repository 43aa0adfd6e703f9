package actor

import "math"

// expf is a float32 exp for the softmax over a vocabulary: Cephes' expf
// (range reduction by ln 2 split in two parts, degree-5 polynomial on
// [-ln2/2, ln2/2]), accurate to about 2 ulp. Inputs below -87 give 0; the
// softmax only calls it with x <= 0.
func expf(x float32) float32 {
	if x < -87.33 {
		return 0
	}
	if x > 88.72 {
		return float32(math.Inf(1))
	}
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	// n = round(x / ln2)
	fn := x*log2e + 0.5
	n := int32(fn)
	if fn < 0 && float32(n) != fn {
		n-- // floor for negatives
	}
	z := float32(n)
	r := x - z*c1 - z*c2
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	y := p*r*r + r + 1
	// y * 2^n; n in [-126, 128) after the range checks except near the
	// ends, where scaling in two steps avoids building an invalid exponent.
	if n < -125 {
		return y * math.Float32frombits(uint32(n+126+127)<<23) * math.Float32frombits(uint32(-126+127)<<23)
	}
	if n > 127 {
		return y * 2 * math.Float32frombits(uint32(n-1+127)<<23)
	}
	return y * math.Float32frombits(uint32(n+127)<<23)
}
