package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
)

// DType is a safetensors element type name as it appears in the header
// ("F32", "F16", "BF16", ...).
type DType string

// Element types this package converts to and from float32. Other types found
// in a file are listed but cannot be read as float32.
const (
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
)

// Size returns the number of bytes of one element, or 0 for a type this
// package does not know.
func (d DType) Size() int {
	switch d {
	case F32, "I32", "U32":
		return 4
	case F16, BF16, "I16", "U16":
		return 2
	case "F64", "I64", "U64":
		return 8
	case "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2":
		return 1
	}
	return 0
}

// decodeFloat32 converts little-endian raw elements of type d into dst.
func decodeFloat32(dst []float32, raw []byte, d DType) error {
	switch d {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
		}
	default:
		return fmt.Errorf("dtype %s cannot be read as float32 (want F32, F16 or BF16)", d)
	}
	return nil
}

// encodeFloat32 appends src converted to type d, little-endian, to dst.
func encodeFloat32(dst []byte, src []float32, d DType) ([]byte, error) {
	switch d {
	case F32:
		for _, v := range src {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
		}
	case F16:
		for _, v := range src {
			dst = binary.LittleEndian.AppendUint16(dst, F32ToF16(v))
		}
	case BF16:
		for _, v := range src {
			dst = binary.LittleEndian.AppendUint16(dst, F32ToBF16(v))
		}
	default:
		return dst, fmt.Errorf("dtype %s cannot be written from float32 (want F32, F16 or BF16)", d)
	}
	return dst, nil
}

// F16ToF32 converts an IEEE 754 half-precision value to float32 exactly
// (subnormals, infinities and NaN included).
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal half: value = mant * 2^-24.
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// F32ToF16 converts a float32 to IEEE 754 half precision with
// round-to-nearest-even; values beyond the half range become infinities.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff { // inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal or zero in half precision.
		if e < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - e)
		half := mant >> shift
		rem := mant & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, which is the correct rounding
	}
	return sign | uint16(half)
}

// F32ToBF16 converts a float32 to bfloat16 with round-to-nearest-even, the
// rounding PyTorch uses; NaN stays NaN.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
