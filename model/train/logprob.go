package train

import (
	"fmt"
	"math"
)

// LogprobPass is a forward pass over a batch that keeps what a backward pass
// from per-token logprobs needs. Rows are the trained tokens (LossMask 1 at a
// position t > 0), sequence by sequence, positions ascending: row i is token
// Pos[i] of sequence Seq[i], predicted from position Pos[i]-1.
type LogprobPass struct {
	// Seq and Pos locate each row's token in the batch.
	Seq, Pos []int
	// Logprobs[i] is log softmax(z/T)[token] of row i over the full
	// vocabulary, T the row's sequence temperature (the actor's convention:
	// before any top-k/top-p truncation).
	Logprobs []float64
	// Entropy[i] is the entropy (nats) of softmax(z/T) at row i.
	Entropy []float64

	// owner is the model that made the pass; backward (BackwardLogprobs)
	// holds the pass's activations in the model's precision.
	owner    any
	backward func(dlogp []float64)
	release  func() // gives the pass's buffers back to its model
	done     bool
}

// Rows is the number of trained tokens.
func (lp *LogprobPass) Rows() int { return len(lp.Logprobs) }

// ForwardLogprobs runs the forward pass over seqs and scores every trained
// token at its sequence's temperature (temperatures[s] > 0; nil means 1 for
// every sequence). The returned pass may be given once to BackwardLogprobs.
func (m *ModelOf[F]) ForwardLogprobs(seqs []Sequence, temperatures []float64) (*LogprobPass, error) {
	if temperatures != nil && len(temperatures) != len(seqs) {
		return nil, fmt.Errorf("train: %d temperatures for %d sequences", len(temperatures), len(seqs))
	}
	for s, t := range temperatures {
		if !(t > 0) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("train: sequence %d has temperature %g, want a finite value > 0", s, t)
		}
	}
	p, err := m.forward(seqs, true)
	if err != nil {
		return nil, err
	}
	lp := &LogprobPass{owner: m, release: func() { m.release(p) }}
	V, M := m.Config.Vocab, len(p.rows)
	lp.Seq, lp.Pos = make([]int, 0, M), make([]int, 0, M)
	invTs := p.arena.take(M) // per row
	for s, seq := range seqs {
		inv := F(1)
		if temperatures != nil {
			inv = 1 / F(temperatures[s])
		}
		for t := 1; t < len(seq.Tokens); t++ {
			if seq.LossMask[t] != 0 {
				invTs[len(lp.Seq)] = inv
				lp.Seq = append(lp.Seq, s)
				lp.Pos = append(lp.Pos, t)
			}
		}
	}
	probs := m.rowLogits(p) // [rows, Vocab] softmax(z/T), reused as dlogits by backward
	lp.Logprobs = make([]float64, M)
	lp.Entropy = make([]float64, M)
	// One row at a time, rows in parallel: the max over the row, u, the exps
	// (one vector pass), the sum and Σ e·u, then the normalisation, while
	// the row is in cache.
	parallelRows(M, V, func(lo, hi int) {
		us := make([]F, V) // one row's u
		for i := lo; i < hi; i++ {
			row := probs[i*V : (i+1)*V]
			invT := invTs[i]
			mx := row[0]
			for _, v := range row {
				mx = max(mx, v)
			}
			// With u_j = (z_j − max)/T and S = Σ exp(u_j): logp_j = u_j − log S
			// and H = log S − Σ p_j u_j.
			zt := row[p.targets[i]]
			for j, v := range row {
				u := (v - mx) * invT
				us[j] = u
				row[j] = u
			}
			expSlice(row)
			var sum, eu float64
			for j, e := range row {
				sum += float64(e)
				eu += float64(e) * float64(us[j])
			}
			logSum := math.Log(sum)
			lp.Logprobs[i] = float64((zt-mx)*invT) - logSum
			lp.Entropy[i] = logSum - eu/sum
			inv := F(1 / sum)
			for j, e := range row {
				row[j] = e * inv
			}
		}
	})
	lp.backward = func(dlogp []float64) {
		parallelRows(len(dlogp), V, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				g := F(dlogp[i])
				row := probs[i*V : (i+1)*V]
				k := -g * invTs[i]
				for j, pj := range row {
					row[j] = k * pj
				}
				row[p.targets[i]] += g * invTs[i]
			}
		})
		m.backwardFromLogits(p, probs)
	}
	return lp, nil
}

// BackwardLogprobs adds to every Param.G the gradient of a loss L given
// dL/dlogp for every row of lp (len lp.Rows()). With p = softmax(z/T):
//
//	dL/dz_j = dL/dlogp · (1[j = token] − p_j) / T.
//
// dlogp is rounded to the model's precision. A pass is consumed: a second
// call is an error, as is a pass of another model.
func (m *ModelOf[F]) BackwardLogprobs(lp *LogprobPass, dlogp []float64) error {
	if lp.owner != any(m) {
		return fmt.Errorf("train: BackwardLogprobs given a pass of another model")
	}
	if lp.done {
		return fmt.Errorf("train: BackwardLogprobs given a consumed pass (called twice, or after Release)")
	}
	if len(dlogp) != lp.Rows() {
		return fmt.Errorf("train: %d logprob gradients for %d rows", len(dlogp), lp.Rows())
	}
	lp.done = true
	if lp.Rows() > 0 {
		lp.backward(dlogp)
	}
	lp.backward = nil // the activations go with it
	lp.Release()
	return nil
}

// Release gives the pass's activation buffers back to its model for the
// model's next forward pass, without a backward pass (a pass that only
// scores tokens); the pass can no longer be given to BackwardLogprobs. Its
// Seq, Pos, Logprobs and Entropy stay valid. BackwardLogprobs releases the
// pass itself; an unreleased pass is left to the garbage collector, and the
// model's next pass allocates afresh. Calling Release again does nothing.
func (lp *LogprobPass) Release() {
	if lp.release == nil {
		return
	}
	lp.done = true
	lp.backward = nil
	lp.release()
	lp.release = nil
}
