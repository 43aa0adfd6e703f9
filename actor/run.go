package actor

import (
	"fmt"
	"math"
	"time"

	ortgo "github.com/yalue/onnxruntime_go"
)

// runBuffers are the inputs and outputs of one ORT Run, in Go memory owned
// by the caller and reused across runs. The ORT values wrapping them are
// created for the run and destroyed after it.
type runBuffers struct {
	B, S, P int
	ids     []int64 // [B, S]
	mask    []int64 // [B, P+S]
	pos     []int64 // [B, S]
	past    *kvBlock
	present *kvBlock
	logits  []float32 // [B, S, vocab]
	half    []byte    // float16 logits before conversion
}

// prepare sizes the id, mask and position buffers for a [B, S] run over P
// cached columns and returns them.
func (rb *runBuffers) prepare(B, S, P int) (ids, mask, pos []int64) {
	rb.B, rb.S, rb.P = B, S, P
	rb.ids = grow(rb.ids, B*S)
	rb.mask = grow(rb.mask, B*(P+S))
	rb.pos = grow(rb.pos, B*S)
	return rb.ids, rb.mask, rb.pos
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// run executes the session on rb and returns the time spent inside ORT.
// rb.present must already be shaped [B, kvHeads, P+S, headDim]; rb.logits
// is resized to [B, S, vocab].
func (p *Policy) run(rb *runBuffers) (time.Duration, error) {
	l := &p.io
	B, S, P := int64(rb.B), int64(rb.S), int64(rb.P)
	kvH, D := int64(l.kvHeads), int64(l.headDim)
	values := make([]ortgo.Value, 0, len(l.inputNames)+len(l.outputNames))
	defer func() {
		for _, v := range values {
			v.Destroy()
		}
	}()
	add := func(v ortgo.Value, err error) error {
		if err != nil {
			return fmt.Errorf("create input tensor: %w", err)
		}
		values = append(values, v)
		return nil
	}
	if err := add(ortgo.NewTensor(ortgo.NewShape(B, S), rb.ids)); err != nil {
		return 0, err
	}
	if err := add(ortgo.NewTensor(ortgo.NewShape(B, P+S), rb.mask)); err != nil {
		return 0, err
	}
	if l.hasPositionIDs {
		if err := add(ortgo.NewTensor(ortgo.NewShape(B, S), rb.pos)); err != nil {
			return 0, err
		}
	}
	pastShape := ortgo.NewShape(B, kvH, P, D)
	for i := 0; i < l.layers; i++ {
		if err := add(kvTensor(pastShape, rb.past.keys[i], l.kvType)); err != nil {
			return 0, err
		}
		if err := add(kvTensor(pastShape, rb.past.values[i], l.kvType)); err != nil {
			return 0, err
		}
	}
	if l.hasUseCacheBranch {
		if err := add(ortgo.NewTensor(ortgo.NewShape(1), []bool{P > 0})); err != nil {
			return 0, err
		}
	}
	nIn := len(values)

	n := int(B * S * int64(l.vocab))
	rb.logits = grow(rb.logits, n)
	var err error
	if l.logitsType == ortgo.TensorElementDataTypeFloat16 {
		rb.half = grow(rb.half, 2*n)
		err = add(ortgo.NewCustomDataTensor(ortgo.NewShape(B, S, int64(l.vocab)), rb.half, l.logitsType))
	} else {
		err = add(ortgo.NewTensor(ortgo.NewShape(B, S, int64(l.vocab)), rb.logits))
	}
	if err != nil {
		return 0, err
	}
	presentShape := ortgo.NewShape(B, kvH, P+S, D)
	for i := 0; i < l.layers; i++ {
		if err := add(kvTensor(presentShape, rb.present.keys[i], l.kvType)); err != nil {
			return 0, err
		}
		if err := add(kvTensor(presentShape, rb.present.values[i], l.kvType)); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	err = p.sess.Run(values[:nIn], values[nIn:])
	took := time.Since(start)
	if err != nil {
		return took, fmt.Errorf("onnxruntime run (batch %d, new %d, past %d): %w", B, S, P, err)
	}
	if l.logitsType == ortgo.TensorElementDataTypeFloat16 {
		halfToFloat(rb.logits, rb.half)
	}
	return took, nil
}

// kvTensor wraps a cache buffer. ORT needs at least the shape's bytes; a
// zero-length past still needs a non-empty Go slice to point at.
func kvTensor(shape ortgo.Shape, buf []byte, t ortgo.TensorElementDataType) (ortgo.Value, error) {
	if len(buf) == 0 {
		buf = make([]byte, 1)
	}
	// Not return NewCustomDataTensor(...): its nil *CustomDataTensor would
	// be a non-nil Value, and a caller that destroys what it got would panic.
	v, err := ortgo.NewCustomDataTensor(shape, buf, t)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// halfToFloat converts IEEE 754 binary16 values (little-endian bytes) to
// float32.
func halfToFloat(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = f16(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
	}
}

func f16(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// subnormal: value = mant * 2^-24
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			return -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}
