package actor

import "math"

// expf is a float32 exp for the softmax over a vocabulary, after Cephes'
// expf: x = n*ln2 + r with n the nearest integer (found by the 1.5*2^23
// rounding trick, without a float-to-int conversion) and ln2 split in two
// parts, then a degree-5 polynomial for e^r on [-ln2/2, ln2/2] and 2^n put
// straight into the exponent bits. Accurate to about 2 ulp for
// x in [-86, 88]; smaller x gives 0. The softmax only calls it with x <= 0.
func expf(x float32) float32 {
	if x < -86 {
		return 0
	}
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
		magic = 12582912 // 1.5 * 2^23
	)
	t := x*log2e + magic
	z := t - magic // round(x / ln2), exactly, as a float
	n := int32(math.Float32bits(t)) - 0x4B400000
	r := x - z*c1 - z*c2
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	y := p*r*r + r + 1
	return math.Float32frombits(uint32(int32(math.Float32bits(y)) + n<<23))
}
