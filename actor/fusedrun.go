package actor

import (
	"context"
	"fmt"
	"time"

	ortgo "github.com/yalue/onnxruntime_go"
)

// gqaOpType is the operator that marks a fused graph (see ioLayout.fused).
const gqaOpType = "GroupQueryAttention"

// runFused executes a fused graph on rb over the shared cache kv: ids
// [B, S], mask [B, P+S] (each row's ones first: its cached tokens then its
// new ones), and kv [B, kvHeads, kv.cols, headDim] per layer bound as both
// past and present, so that GroupQueryAttention writes the new columns in
// place. rb.past and rb.present are not used. It returns the time spent
// inside ORT.
func (p *Policy) runFused(rb *runBuffers, kv *kvBlock) (time.Duration, error) {
	l := &p.io
	B, S, T := int64(rb.B), int64(rb.S), int64(rb.P+rb.S)
	if int(T) > kv.cols || kv.rows != rb.B {
		return 0, fmt.Errorf("onnxruntime run (batch %d, new %d, total %d): the cache buffer is [%d rows, %d columns]", B, S, T, kv.rows, kv.cols)
	}
	var values []ortgo.Value
	defer func() {
		for _, v := range values {
			v.Destroy()
		}
	}()
	add := func(v ortgo.Value, err error) (ortgo.Value, error) {
		if err != nil {
			return nil, fmt.Errorf("create tensor: %w", err)
		}
		values = append(values, v)
		return v, nil
	}
	ins := make([]ortgo.Value, 0, 2+2*l.layers)
	outs := make([]ortgo.Value, 0, 1+2*l.layers)
	v, err := add(ortgo.NewTensor(ortgo.NewShape(B, S), rb.ids[:B*S]))
	if err != nil {
		return 0, err
	}
	ins = append(ins, v)
	if v, err = add(ortgo.NewTensor(ortgo.NewShape(B, T), rb.mask[:B*T])); err != nil {
		return 0, err
	}
	ins = append(ins, v)
	n := int(B * S * int64(l.vocab))
	rb.logits = grow(rb.logits, n)
	if l.logitsType == ortgo.TensorElementDataTypeFloat16 {
		rb.half = grow(rb.half, 2*n)
		v, err = add(ortgo.NewCustomDataTensor(ortgo.NewShape(B, S, int64(l.vocab)), rb.half, l.logitsType))
	} else {
		v, err = add(ortgo.NewTensor(ortgo.NewShape(B, S, int64(l.vocab)), rb.logits))
	}
	if err != nil {
		return 0, err
	}
	outs = append(outs, v)
	shape := ortgo.NewShape(B, int64(l.kvHeads), int64(kv.cols), int64(l.headDim))
	size := int(B) * l.kvHeads * kv.cols * l.headDim * l.kvElem
	for i := 0; i < l.layers; i++ {
		for _, buf := range [2][]byte{kv.keys[i], kv.values[i]} {
			// One value, fed and fetched: past and present share the buffer.
			v, err := add(kvTensor(shape, buf[:size], l.kvType))
			if err != nil {
				return 0, err
			}
			ins = append(ins, v)
			outs = append(outs, v)
		}
	}
	start := time.Now()
	err = p.sess.Run(ins, outs)
	took := time.Since(start)
	if err != nil {
		return took, fmt.Errorf("onnxruntime run (batch %d, new %d, total %d): %w", B, S, T, err)
	}
	if l.logitsType == ortgo.TensorElementDataTypeFloat16 {
		halfToFloat(rb.logits, rb.half)
	}
	return took, nil
}

// scoreFused is ScoreTemperature for a fused graph: sequences batched as
// right-padded first prompts (GroupQueryAttention reads row b's first
// len(b) columns only); a sequence longer than maxTokens runs alone in
// chunks, each a second prompt on top of the cache.
func (p *Policy) scoreFused(ctx context.Context, seqs [][]int32, promptLens []int, maxTokens int, invT float32) ([][]float32, error) {
	V := p.io.vocab
	out := make([][]float32, len(seqs))
	var rb runBuffers
	kv := &kvBlock{}
	var sm sampler
	for lo := 0; lo < len(seqs); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi, S := scoreChunk(seqs, lo, maxTokens)
		B := hi - lo
		if B == 1 && S > maxTokens {
			s := seqs[lo]
			lp := make([]float32, len(s)-promptLens[lo])
			kv.reshape(&p.io, 1, len(s))
			for from := 0; from < len(s); from += maxTokens {
				to := min(from+maxTokens, len(s))
				ids, mask, _ := rb.prepare(1, to-from, from)
				for j := range ids {
					ids[j] = int64(s[from+j])
				}
				for c := range mask {
					mask[c] = 1
				}
				if _, err := p.runFused(&rb, kv); err != nil {
					return nil, fmt.Errorf("score sequence %d columns %d..%d: %w", lo, from, to-1, err)
				}
				for k := 0; k < to-from; k++ {
					if t := from + k + 1; t >= promptLens[lo] && t < len(s) {
						lp[t-promptLens[lo]] = logSoftmaxAt(&sm, rb.logits[k*V:(k+1)*V], s[t], invT)
					}
				}
			}
			out[lo] = lp
			lo = hi
			continue
		}
		ids, mask, _ := rb.prepare(B, S, 0)
		for b := 0; b < B; b++ {
			s := seqs[lo+b]
			for j := 0; j < S; j++ {
				if j < len(s) {
					ids[b*S+j], mask[b*S+j] = int64(s[j]), 1
				} else {
					ids[b*S+j], mask[b*S+j] = 0, 0
				}
			}
		}
		kv.reshape(&p.io, B, S)
		if _, err := p.runFused(&rb, kv); err != nil {
			return nil, fmt.Errorf("score sequences %d..%d: %w", lo, hi-1, err)
		}
		for b := 0; b < B; b++ {
			s := seqs[lo+b]
			lp := make([]float32, len(s)-promptLens[lo+b])
			for t := promptLens[lo+b]; t < len(s); t++ {
				lp[t-promptLens[lo+b]] = logSoftmaxAt(&sm, rb.logits[(b*S+t-1)*V:(b*S+t)*V], s[t], invT)
			}
			out[lo+b] = lp
		}
		lo = hi
	}
	return out, nil
}
