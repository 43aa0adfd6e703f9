package llama

import "fmt"

// Decoder feeds one sequence to a Reference incrementally, keeping its own
// KV cache, the way a runtime decodes: a prefill of the prompt, then one token
// at a time. A Decoder is not safe for concurrent use.
type Decoder struct {
	r     *Reference
	cache *KVCache
	n     int64 // tokens seen so far (the next position id)
}

// NewDecoder returns a decoder with an empty cache.
func (r *Reference) NewDecoder() *Decoder { return &Decoder{r: r} }

// Len returns the number of tokens fed so far.
func (d *Decoder) Len() int { return int(d.n) }

// Append feeds tokens (at least one) and returns the logits [V] that follow
// the last of them.
func (d *Decoder) Append(tokens ...int64) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("decoder: Append needs at least one token")
	}
	S := len(tokens)
	mask := make([]int64, int(d.n)+S)
	pos := make([]int64, S)
	for i := range mask {
		mask[i] = 1
	}
	for i := range pos {
		pos[i] = d.n + int64(i)
	}
	out, err := d.r.Forward(Inputs{InputIDs: [][]int64{tokens}, AttentionMask: [][]int64{mask}, PositionIDs: [][]int64{pos}}, d.cache)
	if err != nil {
		return nil, err
	}
	d.cache = out.Present
	d.n += int64(S)
	return out.At(0, S-1), nil
}

// Argmax returns the index of the largest value (the first on ties).
func Argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// Greedy decodes up to maxNew tokens after prompt with the KV cache, taking
// the argmax each step, and stops after emitting any stop token (which is
// included in the result). It returns the new tokens only.
func (r *Reference) Greedy(prompt []int64, maxNew int, stop ...int64) ([]int64, error) {
	d := r.NewDecoder()
	logits, err := d.Append(prompt...)
	if err != nil {
		return nil, err
	}
	var out []int64
	for len(out) < maxNew {
		next := int64(Argmax(logits))
		out = append(out, next)
		for _, s := range stop {
			if next == s {
				return out, nil
			}
		}
		if len(out) == maxNew {
			break
		}
		if logits, err = d.Append(next); err != nil {
			return nil, err
		}
	}
	return out, nil
}
