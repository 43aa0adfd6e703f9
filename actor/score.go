package actor

import (
	"context"
	"fmt"
	"math"
)

// scoreLogitsBytes bounds the logits ([batch, length, vocab] float32) of one
// scoring Run; sequences are batched up to it.
const scoreLogitsBytes = 256 << 20

// Score returns teacher-forced logprobs of the given sequences at
// temperature 1: for each sequence i, one value per response token
// (positions promptLens[i] .. len(seqs[i])-1), log-softmax(logits) of the
// token given everything before it. Sequences are batched. It is the
// reference-policy scoring of DESIGN.md and is safe for concurrent use.
func (p *Policy) Score(ctx context.Context, seqs [][]int32, promptLens []int) ([][]float32, error) {
	return p.ScoreTemperature(ctx, seqs, promptLens, 1)
}

// ScoreTemperature is Score with the logits divided by temperature (> 0),
// the quantity Sequence.Logprobs records for a group sampled at that
// temperature.
func (p *Policy) ScoreTemperature(ctx context.Context, seqs [][]int32, promptLens []int, temperature float64) ([][]float32, error) {
	if len(promptLens) != len(seqs) {
		return nil, fmt.Errorf("score: %d sequences but %d prompt lengths", len(seqs), len(promptLens))
	}
	if !(temperature > 0) || math.IsInf(temperature, 0) {
		return nil, fmt.Errorf("score: temperature %v must be a finite number > 0", temperature)
	}
	V := p.io.vocab
	for i, s := range seqs {
		if promptLens[i] < 1 || promptLens[i] > len(s) {
			return nil, fmt.Errorf("score: sequence %d: prompt length %d outside [1, %d]", i, promptLens[i], len(s))
		}
		for j, id := range s {
			if id < 0 || int(id) >= V {
				return nil, fmt.Errorf("score: sequence %d: token %d at position %d is outside the vocabulary [0, %d)", i, id, j, V)
			}
		}
	}
	out := make([][]float32, len(seqs))
	budget := p.scoreBudget
	if budget <= 0 {
		budget = scoreLogitsBytes
	}
	maxTokens := max(budget/(4*V), 1)
	if p.io.fused {
		return p.scoreFused(ctx, seqs, promptLens, maxTokens, float32(1/temperature))
	}
	var rb runBuffers
	past, present := &kvBlock{}, &kvBlock{}
	var sm sampler
	for lo := 0; lo < len(seqs); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi, S := scoreChunk(seqs, lo, maxTokens)
		B := hi - lo
		invT := float32(1 / temperature)
		if B == 1 && S > maxTokens {
			lp, err := p.scoreInChunks(ctx, &rb, seqs[lo], promptLens[lo], maxTokens, invT, &sm)
			if err != nil {
				return nil, fmt.Errorf("score sequence %d: %w", lo, err)
			}
			out[lo] = lp
			lo = hi
			continue
		}
		ids, mask, pos := rb.prepare(B, S, 0)
		for b := 0; b < B; b++ {
			s := seqs[lo+b]
			pad := S - len(s)
			for j := 0; j < S; j++ {
				if j < pad {
					ids[b*S+j], mask[b*S+j], pos[b*S+j] = 0, 0, 0
				} else {
					ids[b*S+j], mask[b*S+j], pos[b*S+j] = int64(s[j-pad]), 1, int64(j-pad)
				}
			}
		}
		past.reshape(&p.io, B, 0)
		present.reshape(&p.io, B, S)
		rb.past, rb.present = past, present
		if _, err := p.run(&rb); err != nil {
			return nil, fmt.Errorf("score sequences %d..%d: %w", lo, hi-1, err)
		}
		for b := 0; b < B; b++ {
			s := seqs[lo+b]
			pad := S - len(s)
			lp := make([]float32, len(s)-promptLens[lo+b])
			for t := promptLens[lo+b]; t < len(s); t++ {
				row := rb.logits[(b*S+pad+t-1)*V : (b*S+pad+t)*V]
				lp[t-promptLens[lo+b]] = logSoftmaxAt(&sm, row, s[t], invT)
			}
			out[lo+b] = lp
		}
		lo = hi
	}
	return out, nil
}

// scoreInChunks scores one sequence longer than the logits budget allows
// in one Run: chunk columns at a time, each Run's cache the next one's past.
func (p *Policy) scoreInChunks(ctx context.Context, rb *runBuffers, s []int32, promptLen, chunk int, invT float32, sm *sampler) ([]float32, error) {
	V := p.io.vocab
	lp := make([]float32, len(s)-promptLen)
	past, present := &kvBlock{}, &kvBlock{}
	past.reshape(&p.io, 1, 0)
	for from := 0; from < len(s); from += chunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		to := min(from+chunk, len(s))
		S := to - from
		ids, mask, pos := rb.prepare(1, S, from)
		for j := 0; j < S; j++ {
			ids[j], pos[j] = int64(s[from+j]), int64(from+j)
		}
		for c := range mask {
			mask[c] = 1
		}
		present.reshape(&p.io, 1, from+S)
		rb.past, rb.present = past, present
		if _, err := p.run(rb); err != nil {
			return nil, fmt.Errorf("columns %d..%d: %w", from, to-1, err)
		}
		// Logits row k is position from+k; it predicts token from+k+1.
		for k := 0; k < S; k++ {
			if t := from + k + 1; t >= promptLen && t < len(s) {
				lp[t-promptLen] = logSoftmaxAt(sm, rb.logits[k*V:(k+1)*V], s[t], invT)
			}
		}
		past, present = present, past
	}
	return lp, nil
}

// logSoftmaxAt returns log-softmax(row * invT)[id].
func logSoftmaxAt(sm *sampler, row []float32, id int32, invT float32) float32 {
	m := rowMax(row)
	sm.weights = grow(sm.weights, len(row))
	sum := expShiftedScaled(sm.weights, row, m, invT)
	return float32(float64((row[id]-m)*invT) - math.Log(sum))
}

// scoreChunk is the next batch of sequences to score from lo, by greedy
// chunking in input order: sequences are added while the padded batch
// (rows × the longest, S) stays within maxTokens; a single long sequence
// runs alone. It returns the end of the chunk and S.
func scoreChunk(seqs [][]int32, lo, maxTokens int) (hi, S int) {
	hi, S = lo+1, len(seqs[lo])
	for hi < len(seqs) {
		s2 := max(S, len(seqs[hi]))
		if (hi-lo+1)*s2 > maxTokens {
			break
		}
		S = s2
		hi++
	}
	return hi, S
}
