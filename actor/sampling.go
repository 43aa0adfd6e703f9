package actor

import (
	"fmt"
	"math"
	"slices"
)

// Sampling says how a group's tokens are drawn and when its sequences stop.
// It is the one sampling type of toolrl: the engine's GroupRequest, a rollout
// job's `sampling:` section (the yaml keys below), the CLI flags and
// generation_config.json's defaults all fill it, and Validate checks it.
//
// Given to the engine (GroupRequest), the values are used as they are: the
// zero value is greedy decoding until an EOS id or the context limit. As one
// source of a rollout job's settings (orchestrator.Job.Sampling, or
// GenerationConfig's result), a zero field is unset and takes the next
// source's value; there greedy decoding is asked for with Greedy, as
// Temperature 0 would read as unset (see docs/rollout.md, "Sampling
// precedence").
type Sampling struct {
	// Temperature divides the logits before the softmax; 0 means greedy
	// (argmax, ties to the lowest id).
	Temperature float64 `yaml:"temperature"`
	// Greedy decodes greedily whatever Temperature says: the engine treats
	// it as Temperature 0. It is the explicit "temperature 0" of a job file
	// (greedy: true), of --greedy and of generation_config.json's
	// do_sample: false.
	Greedy bool `yaml:"greedy"`
	// TopK keeps the K most likely tokens; 0 keeps all.
	TopK int `yaml:"top_k"`
	// TopP keeps the smallest set of most likely tokens whose probability
	// (after TopK) reaches TopP; 0 or 1 keeps all.
	TopP float64 `yaml:"top_p"`
	// MinP keeps tokens whose probability is at least MinP times the most
	// likely token's; 0 keeps all. It must be below 1.
	MinP float64 `yaml:"min_p"`
	// MaxNewTokens caps the tokens sampled in one model turn (between tool
	// results), as Hugging Face's max_new_tokens caps one generate call; 0
	// means no cap. A sequence that reaches it finishes with FinishLength.
	MaxNewTokens int `yaml:"max_new_tokens"`
	// MaxSampledTokens caps the tokens the model samples over the whole
	// trajectory (injected tokens do not count); 0 means no cap other than
	// the model's context. A sequence that reaches it finishes with
	// FinishLength.
	MaxSampledTokens int `yaml:"-"`
	// MaxResponseTokens caps the whole response, sampled and injected tokens
	// together; 0 means no cap. A sequence that reaches it finishes with
	// FinishLength, also when an injection brings it there. A rollout job
	// sets it from limits.max_tokens.
	MaxResponseTokens int `yaml:"-"`
	// StopStrings end a sequence (FinishStop) as soon as its generated text
	// ends with one of them; the token that completed it is kept.
	StopStrings []string `yaml:"stop"`
	// EOS lists the ids that end a sequence (FinishStop; the id is kept in
	// the trajectory with its logprob). Nil means the policy's EOS ids
	// (generation_config.json eos_token_id, which may be a list).
	EOS []int32 `yaml:"-"`
}

// Validate reports a setting out of range, naming it by its job-file key
// (sampling.temperature, ...). Zero values are valid; Greedy with a
// Temperature > 0 is valid too (Greedy wins), though a job file or flags
// that give both are refused where they are read.
func (s Sampling) Validate() error {
	switch {
	case !(s.Temperature >= 0) || math.IsInf(s.Temperature, 0):
		return fmt.Errorf("sampling.temperature: %g, want a finite value ≥ 0 (0: greedy)", s.Temperature)
	case s.TopK < 0:
		return fmt.Errorf("sampling.top_k: %d, want ≥ 0 (0: keep all)", s.TopK)
	case !(s.TopP >= 0 && s.TopP <= 1):
		return fmt.Errorf("sampling.top_p: %g, want in (0, 1]", s.TopP)
	case !(s.MinP >= 0 && s.MinP < 1):
		return fmt.Errorf("sampling.min_p: %g, want in [0, 1)", s.MinP)
	case s.MaxNewTokens < 0:
		return fmt.Errorf("sampling.max_new_tokens: %d, want ≥ 1 (per model turn)", s.MaxNewTokens)
	case s.MaxSampledTokens < 0:
		return fmt.Errorf("sampling: MaxSampledTokens %d, want ≥ 0 (0: no cap)", s.MaxSampledTokens)
	case s.MaxResponseTokens < 0:
		return fmt.Errorf("limits.max_tokens: %d, want ≥ 1", s.MaxResponseTokens)
	}
	for i, stop := range s.StopStrings {
		if stop == "" {
			return fmt.Errorf("sampling.stop[%d]: empty string", i)
		}
	}
	return nil
}

// truncates reports whether any of top-k, top-p or min-p is active.
func (s *Sampling) truncates(vocab int) bool {
	return (s.TopK > 0 && s.TopK < vocab) || (s.TopP > 0 && s.TopP < 1) || s.MinP > 0
}

// sampler draws tokens from logit rows. It owns scratch buffers sized to the
// vocabulary, so one sampler serves one goroutine.
type sampler struct {
	weights []float32 // exp((logit - max) / T) per id
	idx     []int32   // candidate ids when truncating
	heap    []int32   // top-k selection (a min-heap of ids by weight)
	scratch []float32 // topKSelect's copy of the weights
}

// sample draws one token from logits with the uniform draw u in [0, 1) and
// returns it with its logprob by the package's convention:
// log-softmax(logits/T) over the full vocabulary, T = 1 when greedy.
func (sm *sampler) sample(logits []float32, s *Sampling, u float64) (int32, float32) {
	V := len(logits)
	if cap(sm.weights) < V {
		sm.weights = make([]float32, V)
	}
	w := sm.weights[:V]
	if s.Temperature == 0 || s.Greedy {
		best, max := argmax(logits)
		sum := expShiftedScaled(w, logits, max, 1)
		return int32(best), float32(-math.Log(sum))
	}
	max := rowMax(logits)
	invT := float32(1 / s.Temperature)
	sum := expShiftedScaled(w, logits, max, invT)
	logSum := math.Log(sum)
	logprob := func(id int32) float32 {
		return float32(float64((logits[id]-max)*invT) - logSum)
	}
	if !s.truncates(V) {
		id := inverseCDF(w, nil, u*sum)
		return id, logprob(id)
	}
	cand := sm.candidates(w, s, sum)
	var mass float64
	for _, id := range cand {
		mass += float64(w[id])
	}
	id := inverseCDF(w, cand, u*mass)
	return id, logprob(id)
}

// candidates applies top-k, then top-p, then min-p (the order of Hugging
// Face's logits warpers) to the weights, whose total is sum, and returns the
// surviving ids.
// logprobOf is the logprob sample records for token id: at the sampling
// temperature, or at T = 1 when greedy (sample's convention).
func (sm *sampler) logprobOf(logits []float32, s *Sampling, id int32) float32 {
	V := len(logits)
	if cap(sm.weights) < V {
		sm.weights = make([]float32, V)
	}
	w := sm.weights[:V]
	invT := float32(1)
	if s.Temperature != 0 && !s.Greedy {
		invT = float32(1 / s.Temperature)
	}
	max := rowMax(logits)
	sum := expShiftedScaled(w, logits, max, invT)
	return float32(float64((logits[id]-max)*invT) - math.Log(sum))
}

func (sm *sampler) candidates(w []float32, s *Sampling, sum float64) []int32 {
	V := len(w)
	var idx []int32
	topP := s.TopP > 0 && s.TopP < 1
	switch {
	case s.TopK > 0 && s.TopK < V:
		idx = sm.topK(w, s.TopK)
		if topP {
			// idx is sorted by weight, descending: the nucleus is a prefix.
			var mass float64
			for _, id := range idx {
				mass += float64(w[id])
			}
			target, acc := s.TopP*mass, 0.0
			for k, id := range idx {
				acc += float64(w[id])
				if acc >= target {
					idx = idx[:k+1]
					break
				}
			}
		}
	case topP:
		// Tokens lighter than (1-p)*sum/V weigh at most (1-p)*sum together,
		// so the nucleus lies among the heavier ones: select it there.
		thr := float32((1 - s.TopP) * sum / float64(V))
		idx = sm.idx[:0]
		for i, x := range w {
			if x >= thr {
				idx = append(idx, int32(i))
			}
		}
		sm.idx = idx
		idx = idx[:nucleus(idx, w, s.TopP*sum)]
	default:
		idx = sm.idx[:0]
		for i := range w {
			idx = append(idx, int32(i))
		}
		sm.idx = idx
	}
	if s.MinP > 0 {
		// The most likely token has weight exp(0) = 1, so the threshold
		// relative to it is MinP itself.
		thr := float32(s.MinP)
		n := 0
		for _, id := range idx {
			if w[id] >= thr {
				idx[n] = id
				n++
			}
		}
		idx = idx[:n]
	}
	return idx
}

// selectBelow is the vocabulary size up to which topK selects by quickselect
// rather than by heap. A heap rejects most ids with one comparison but pays
// about k·ln(V/k) sift-downs; quickselect pays a copy and about 2V
// comparisons. With k = 50 the heap wins on Llama-size vocabularies and loses
// on small ones (the default policy's 640 ids), where sampling is most of the
// step's Go time.
const selectBelow = 1024

// topK returns the k ids of largest weight (the lowest ids among equal
// weights), sorted by weight descending (then by id).
func (sm *sampler) topK(w []float32, k int) []int32 {
	if len(w) <= selectBelow {
		if idx, ok := sm.topKSelect(w, k); ok {
			return idx
		}
	}
	return sm.topKHeap(w, k)
}

// topKSelect is topK by quickselect: find the k-th largest weight τ, take the
// ids heavier than τ and then the lowest ids equal to τ, and sort those k. It
// reports false, leaving the work to the heap, when a weight is NaN.
func (sm *sampler) topKSelect(w []float32, k int) ([]int32, bool) {
	sm.scratch = grow(sm.scratch, len(w))
	buf := sm.scratch
	for i, x := range w {
		if x != x {
			return nil, false
		}
		buf[i] = x
	}
	tau := kthLargest(buf, k)
	idx := sm.heap[:0]
	for i, x := range w {
		if x > tau {
			idx = append(idx, int32(i))
		}
	}
	for i, x := range w {
		if len(idx) == k {
			break
		}
		if x == tau {
			idx = append(idx, int32(i))
		}
	}
	slices.SortFunc(idx, func(a, b int32) int {
		switch {
		case w[a] > w[b]:
			return -1
		case w[a] < w[b]:
			return 1
		}
		return int(a - b)
	})
	sm.heap = idx
	return idx, true
}

// kthLargest returns the k-th largest value of a (1 ≤ k ≤ len(a), no NaN),
// reordering a: Hoare quickselect, descending, median-of-three pivots. The
// pivot is a value of the range, so the inner scans stop inside it.
func kthLargest(a []float32, k int) float32 {
	lo, hi, target := 0, len(a)-1, k-1
	for lo < hi {
		x, y, z := a[lo], a[lo+(hi-lo)/2], a[hi]
		p := max(min(x, y), min(max(x, y), z))
		i, j := lo, hi
		for i <= j {
			for a[i] > p {
				i++
			}
			for a[j] < p {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		// Now a[lo..j] ≥ p, a[i..hi] ≤ p and a[j+1..i-1] = p.
		switch {
		case target <= j:
			hi = j
		case target >= i:
			lo = i
		default:
			return p
		}
	}
	return a[target]
}

// topKHeap is topK in one pass with a min-heap: most ids are rejected by a
// single comparison with the heap's root.
func (sm *sampler) topKHeap(w []float32, k int) []int32 {
	h := sm.heap[:0]
	// less orders the heap: lighter first; among equal weights the higher id
	// is "lighter", so that lower ids survive.
	less := func(a, b int32) bool { return w[a] < w[b] || (w[a] == w[b] && a > b) }
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && less(h[r], h[l]) {
				m = r
			}
			if !less(h[m], h[i]) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := 0; i < k; i++ {
		h = append(h, int32(i))
	}
	for i := k/2 - 1; i >= 0; i-- {
		down(i)
	}
	for i := k; i < len(w); i++ {
		if w[i] > w[h[0]] {
			h[0] = int32(i)
			down(0)
		}
	}
	// Heap-sort in place: repeatedly move the lightest to the end.
	all := h
	for n := len(all) - 1; n > 0; n-- {
		all[0], all[n] = all[n], all[0]
		h = all[:n]
		down(0)
	}
	sm.heap = all
	return all
}

// inverseCDF returns the first id (over cand, or over all ids when cand is
// nil) at which the running sum of weights exceeds target. Rounding can leave
// target at or past the total; then the last id with a positive weight wins.
func inverseCDF(w []float32, cand []int32, target float64) int32 {
	var acc float64
	last := int32(-1)
	if cand == nil {
		// Skip whole blocks of eight by their float32 sum; scan inside the
		// block where the target falls.
		i := 0
		for ; i+8 <= len(w); i += 8 {
			b := w[i : i+8 : i+8]
			blk := ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]))
			if acc+float64(blk) <= target {
				acc += float64(blk)
				continue
			}
			break
		}
		for ; i < len(w); i++ {
			if x := w[i]; x > 0 {
				acc += float64(x)
				if acc > target {
					return int32(i)
				}
			}
		}
		for i := len(w) - 1; i >= 0; i-- {
			if w[i] > 0 {
				return int32(i)
			}
		}
		return 0
	} else {
		for _, id := range cand {
			if x := w[id]; x > 0 {
				acc += float64(x)
				last = id
				if acc > target {
					return last
				}
			}
		}
	}
	if last < 0 { // every weight underflowed: cannot happen with a finite max
		return 0
	}
	return last
}

// argmax returns the index and value of the largest logit (the lowest index
// among ties).
func argmax(x []float32) (int, float32) {
	m := rowMax(x)
	for i, v := range x {
		if v == m {
			return i, m
		}
	}
	return 0, m // NaNs only
}

// expShiftedScaled writes w[i] = exp((x[i] - max) * invT) and returns the sum
// (accumulated in float64): eight lanes at a time with AVX2 where the CPU
// has it, the rest with four independent partial sums.
func expShiftedScaled(w, x []float32, max, invT float32) float64 {
	w = w[:len(x)]
	var s0, s1, s2, s3 float64
	i := 0
	if haveAVX2 && len(x) >= 8 {
		i = len(x) &^ 7
		s0 = expSumAVX2(&w[0], &x[0], i, max, invT)
	}
	for ; i+4 <= len(x); i += 4 {
		e0 := expf((x[i] - max) * invT)
		e1 := expf((x[i+1] - max) * invT)
		e2 := expf((x[i+2] - max) * invT)
		e3 := expf((x[i+3] - max) * invT)
		w[i], w[i+1], w[i+2], w[i+3] = e0, e1, e2, e3
		s0 += float64(e0)
		s1 += float64(e1)
		s2 += float64(e2)
		s3 += float64(e3)
	}
	for ; i < len(x); i++ {
		e := expf((x[i] - max) * invT)
		w[i] = e
		s0 += float64(e)
	}
	return (s0 + s1) + (s2 + s3)
}

// rowMax returns the largest logit.
func rowMax(x []float32) float32 {
	i, m := 0, x[0]
	if haveAVX2 && len(x) >= 8 {
		i = len(x) &^ 7
		m = maxAVX2(&x[0], i)
	}
	for ; i < len(x); i++ {
		if x[i] > m {
			m = x[i]
		}
	}
	return m
}

// nucleus partially orders idx by descending weight and returns the length
// n of the shortest prefix whose weight reaches target (top-p).
func nucleus(idx []int32, w []float32, target float64) int {
	lo, hi := 0, len(idx)
	var acc float64 // weight of idx[:lo], all heavier than idx[lo:]
	for hi-lo > 1 {
		gt, eq := partition3(idx[lo:hi], w)
		var mGT float64
		for _, id := range idx[lo : lo+gt] {
			mGT += float64(w[id])
		}
		if acc+mGT >= target {
			hi = lo + gt
			continue
		}
		acc += mGT
		for j := lo + gt; j < lo+eq; j++ {
			acc += float64(w[idx[j]])
			if acc >= target {
				return j + 1
			}
		}
		lo += eq
	}
	if lo >= len(idx) {
		return len(idx)
	}
	return lo + 1
}

// partition3 rearranges ids into weight > pivot, == pivot, < pivot and
// returns the ends of the first two parts. The pivot is the median of the
// first, middle and last weights.
func partition3(ids []int32, w []float32) (gt, eq int) {
	a, b, c := w[ids[0]], w[ids[len(ids)/2]], w[ids[len(ids)-1]]
	p := max(min(a, b), min(max(a, b), c))
	// Dutch national flag, descending.
	i, j, k := 0, 0, len(ids)
	for j < k {
		v := w[ids[j]]
		switch {
		case v > p:
			ids[i], ids[j] = ids[j], ids[i]
			i++
			j++
		case v < p:
			k--
			ids[j], ids[k] = ids[k], ids[j]
		default:
			j++
		}
	}
	return i, k
}
