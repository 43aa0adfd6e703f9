package train

import (
	"fmt"
	"math"
)

// Sequence is one training sequence: the tokens exactly as the policy sees
// them, and which of them the loss trains.
type Sequence struct {
	Tokens []int32
	// LossMask[t] = 1 when Tokens[t] is a policy token to learn (predicted from
	// position t-1); 0 for prompt tokens and tokens injected by a tool.
	LossMask []uint8
}

// layerCache holds one layer's activations for the backward pass.
type layerCache[F Float] struct {
	xin, h1, q, k, v, o, xmid, h2, g, u, a []F
	r1, r2                                 []F
	sg                                     []F   // sigmoid(g), for the SwiGLU backward
	probs                                  [][]F // per sequence: [heads][T][T]
	// With QKNorm: q and k before their norm (projection plus bias) and
	// the per-head rsqrt of the norm, [n·heads].
	qpre, kpre, rq, rk []F
}

// pass holds a batch's layout and activations. Its float buffers come from
// its arena (workspace.go): a pass is reused, once released, by the model's
// next forward.
type pass[F Float] struct {
	arena       arena[F]
	n, maxT     int
	starts, lns []int
	tokens      []int32
	// rowSeq and rowPos are each row's sequence and position in it.
	rowSeq, rowPos []int32
	layers         []layerCache[F]
	xf, hf, rf     []F
	ropes          []ropeTables[F] // per sequence
	rows           []int           // positions whose next token is trained
	targets        []int32         // the trained next tokens
	hm, logits     []F
	rowLoss        []float64 // crossEntropy's per-row losses
}

// Step runs forward and backward on seqs, adds the gradient of the mean
// cross-entropy over trained tokens to every Param.G, and returns the summed
// loss (nats) and the number of trained tokens. A batch with no trained token
// returns 0, 0 and leaves the gradients unchanged.
func (m *ModelOf[F]) Step(seqs []Sequence) (lossSum float64, count int, err error) {
	p, err := m.forward(seqs, true)
	if err != nil {
		return 0, 0, err
	}
	defer m.release(p)
	if len(p.rows) == 0 {
		return 0, 0, nil
	}
	lossSum = m.backward(p)
	return lossSum, len(p.rows), nil
}

// Loss returns the summed loss and count without touching gradients.
func (m *ModelOf[F]) Loss(seqs []Sequence) (float64, int, error) {
	p, err := m.forward(seqs, true)
	if err != nil {
		return 0, 0, err
	}
	defer m.release(p)
	loss, _ := m.crossEntropy(p, false)
	return loss, len(p.rows), nil
}

// Logits returns the logits [len(tokens), Vocab] of one sequence, for tests
// and for comparison with a reference forward.
func (m *ModelOf[F]) Logits(tokens []int32) ([]F, error) {
	p, err := m.forward([]Sequence{{Tokens: tokens}}, false)
	if err != nil {
		return nil, err
	}
	defer m.release(p)
	c := m.Config
	out := make([]F, p.n*c.Vocab)
	linear(out, p.hf, m.head.W, p.n, c.Dim, c.Vocab)
	return out, nil
}

func (m *ModelOf[F]) forward(seqs []Sequence, train bool) (*pass[F], error) {
	c := m.Config
	p := m.newPass()
	for i, s := range seqs {
		if len(s.Tokens) > c.MaxPos {
			m.release(p)
			return nil, fmt.Errorf("train: sequence %d has %d tokens, max %d", i, len(s.Tokens), c.MaxPos)
		}
		if train && len(s.LossMask) != len(s.Tokens) {
			m.release(p)
			return nil, fmt.Errorf("train: sequence %d has %d tokens but %d mask values", i, len(s.Tokens), len(s.LossMask))
		}
		rt, err := m.tablesFor(len(s.Tokens))
		if err != nil {
			m.release(p)
			return nil, err
		}
		p.ropes = append(p.ropes, rt)
		p.starts = append(p.starts, p.n)
		p.lns = append(p.lns, len(s.Tokens))
		p.n += len(s.Tokens)
		p.maxT = max(p.maxT, len(s.Tokens))
		for t, tok := range s.Tokens {
			if tok < 0 || int(tok) >= c.Vocab {
				m.release(p)
				return nil, fmt.Errorf("train: sequence %d token %d is %d, vocab %d", i, t, tok, c.Vocab)
			}
			p.tokens = append(p.tokens, tok)
			p.rowSeq = append(p.rowSeq, int32(i))
			p.rowPos = append(p.rowPos, int32(t))
			if train && t > 0 && s.LossMask[t] != 0 {
				p.rows = append(p.rows, p.n-len(s.Tokens)+t-1)
				p.targets = append(p.targets, tok)
			}
		}
	}
	hd, aw := c.HeadDimension(), c.attnWidth()
	n, d, kv, f := p.n, c.Dim, c.KVHeads*hd, c.FF
	a := &p.arena
	x := a.take(n * d)
	parallelRows(n, d, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			tok := int(p.tokens[i])
			copy(x[i*d:(i+1)*d], m.embed.W[tok*d:(tok+1)*d])
		}
	})
	if cap(p.layers) < c.Layers {
		p.layers = make([]layerCache[F], c.Layers)
	}
	p.layers = p.layers[:c.Layers]
	tmp := a.take(n * d) // o_proj's and down_proj's outputs before the residual add
	for li, l := range m.layers {
		lc := &p.layers[li]
		lc.xin = x
		lc.h1, lc.r1 = a.take(n*d), a.take(n)
		rmsNorm(lc.h1, lc.r1, x, l.attnNorm.W, n, d, c.NormEps)
		lc.q, lc.k, lc.v = a.take(n*aw), a.take(n*kv), a.take(n*kv)
		linear(lc.q, lc.h1, l.wq.W, n, d, aw)
		linear(lc.k, lc.h1, l.wk.W, n, d, kv)
		linear(lc.v, lc.h1, l.wv.W, n, d, kv)
		if l.bq != nil {
			addBias(lc.q, l.bq.W)
			addBias(lc.k, l.bk.W)
			addBias(lc.v, l.bv.W)
		}
		lc.qpre, lc.kpre, lc.rq, lc.rk = nil, nil, nil, nil
		if l.qNorm != nil {
			// Qwen3Attention: q_norm/k_norm over each head's HeadDim values.
			lc.qpre, lc.kpre = lc.q, lc.k
			lc.q, lc.rq = a.take(n*aw), a.take(n*c.Heads)
			lc.k, lc.rk = a.take(n*kv), a.take(n*c.KVHeads)
			rmsNorm(lc.q, lc.rq, lc.qpre, l.qNorm.W, n*c.Heads, hd, c.NormEps)
			rmsNorm(lc.k, lc.rk, lc.kpre, l.kNorm.W, n*c.KVHeads, hd, c.NormEps)
		}
		m.rope(lc.q, p, c.Heads, false)
		m.rope(lc.k, p, c.KVHeads, false)
		lc.o = a.take(n * aw)
		lc.probs = lc.probs[:0]
		for _, T := range p.lns {
			lc.probs = append(lc.probs, a.take(c.Heads*T*T))
		}
		m.attention(p, lc)
		linear(tmp, lc.o, l.wo.W, n, aw, d)
		if l.bo != nil {
			addBias(tmp, l.bo.W)
		}
		lc.xmid = a.take(n * d)
		addInto(lc.xmid, x, tmp)
		lc.h2, lc.r2 = a.take(n*d), a.take(n)
		rmsNorm(lc.h2, lc.r2, lc.xmid, l.mlpNorm.W, n, d, c.NormEps)
		lc.g, lc.u, lc.a, lc.sg = a.take(n*f), a.take(n*f), a.take(n*f), a.take(n*f)
		linear(lc.g, lc.h2, l.wg.W, n, d, f)
		linear(lc.u, lc.h2, l.wu.W, n, d, f)
		swigluForward(lc.g, lc.u, lc.sg, lc.a)
		linear(tmp, lc.a, l.wd.W, n, f, d)
		x = a.take(n * d)
		addInto(x, lc.xmid, tmp)
	}
	p.xf = x
	p.hf, p.rf = a.take(n*d), a.take(n)
	rmsNorm(p.hf, p.rf, x, m.finalNorm.W, n, d, c.NormEps)
	return p, nil
}

// addInto sets y = a + b elementwise.
func addInto[F Float](y, a, b []F) {
	parallelRange(len(y), minChunk, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			y[i] = a[i] + b[i]
		}
	})
}

// addTo adds b to y elementwise.
func addTo[F Float](y, b []F) {
	parallelRange(len(y), minChunk, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			y[i] += b[i]
		}
	})
}

// rmsNorm: y = x * rsqrt(mean(x²) + eps) * w per row; r keeps the rsqrt.
func rmsNorm[F Float](y, r, x, w []F, n, d int, eps float64) {
	parallelRows(n, d, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := x[i*d : (i+1)*d]
			var ss float64
			for _, v := range row {
				ss += float64(v) * float64(v)
			}
			ri := F(1 / math.Sqrt(ss/float64(d)+eps))
			r[i] = ri
			out := y[i*d : (i+1)*d]
			for j, v := range row {
				out[j] = v * ri * w[j]
			}
		}
	})
}

// addBias adds b to every row of y ([rows, len(b)]).
func addBias[F Float](y, b []F) {
	w := len(b)
	parallelRows(len(y)/w, w, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := y[i*w : (i+1)*w]
			for j, v := range b {
				row[j] += v
			}
		}
	})
}

// biasBack adds the column sums of dy ([rows, len(db)]) to db, rows in order.
func biasBack[F Float](db, dy []F) {
	w := len(db)
	n := len(dy) / w
	parallelCols(n, w, func(lo, hi int) {
		acc := db[lo:hi]
		for i := range n {
			for j, v := range dy[i*w+lo : i*w+hi] {
				acc[j] += v
			}
		}
	})
}

// rmsNormBack adds to dw and writes dx (overwrite) for y = rmsNorm(x).
// With g = dy·w: dx = r·g − x·r³·mean(g·x). dx is computed by rows, dw by
// columns (each summed over the rows in order).
func rmsNormBack[F Float](dx, dw, dy, x, r, w []F, n, d int) {
	parallelRows(n, d, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			xr, dyr, ri := x[i*d:(i+1)*d], dy[i*d:(i+1)*d], r[i]
			var dot float64
			for j := range d {
				dot += float64(dyr[j]*w[j]) * float64(xr[j])
			}
			k := F(dot/float64(d)) * ri * ri * ri
			out := dx[i*d : (i+1)*d]
			for j := range d {
				out[j] = ri*dyr[j]*w[j] - xr[j]*k
			}
		}
	})
	parallelCols(n, d, func(lo, hi int) {
		acc := dw[lo:hi]
		for i := range n {
			xr, dyr, ri := x[i*d+lo:i*d+hi], dy[i*d+lo:i*d+hi], r[i]
			for j := range acc {
				acc[j] += dyr[j] * xr[j] * ri
			}
		}
	})
}

// rope rotates each head's halves in place (HF rotate_half): for i < hd/2,
// (a, b) = (x[i], x[i+hd/2]) becomes (a·cos − b·sin, b·cos + a·sin).
// inverse applies the transpose rotation (the backward pass).
func (m *ModelOf[F]) rope(x []F, p *pass[F], heads int, inverse bool) {
	hd := m.Config.HeadDimension()
	half := hd / 2
	width := heads * hd
	parallelRows(p.n, width, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			rt, t := p.ropes[p.rowSeq[r]], int(p.rowPos[r])
			cs, sn := rt.cos[t*half:(t+1)*half], rt.sin[t*half:(t+1)*half]
			row := x[r*width : (r+1)*width]
			for h := range heads {
				v := row[h*hd : (h+1)*hd]
				for i := range half {
					a, b := v[i], v[i+half]
					if inverse {
						v[i], v[i+half] = a*cs[i]+b*sn[i], b*cs[i]-a*sn[i]
					} else {
						v[i], v[i+half] = a*cs[i]-b*sn[i], b*cs[i]+a*sn[i]
					}
				}
			}
		}
	})
}

// attention computes causal softmax(q·kᵀ/sqrt(hd))·v per sequence and head,
// keeping the probabilities for backward.
func (m *ModelOf[F]) attention(p *pass[F], lc *layerCache[F]) {
	c := m.Config
	hd, aw := c.HeadDimension(), c.attnWidth()
	kv := c.KVHeads * hd
	group := c.Heads / c.KVHeads
	scale := F(1 / math.Sqrt(float64(hd)))
	packs := make([]packScratch, seqWorkers(len(p.starts)))
	parallelSeqs(len(p.starts), func(w, s int) {
		start, T := p.starts[s], p.lns[s]
		probs := lc.probs[s]
		for h := range c.Heads {
			g := h / group
			pr := probs[h*T*T : (h+1)*T*T]
			gemmInWorker(&packs[w], false, true, T, T, hd, scale, lc.q[start*aw+h*hd:], aw, lc.k[start*kv+g*hd:], kv, 0, pr, T)
			// Causal softmax by rows: the masked entries become −Inf, whose
			// exp is 0, so one exp pass covers the whole [T, T] block.
			negInf := F(math.Inf(-1))
			for i := range T {
				row := pr[i*T : (i+1)*T]
				mx := row[0]
				for j := 1; j <= i; j++ {
					mx = max(mx, row[j])
				}
				for j := 0; j <= i; j++ {
					row[j] -= mx
				}
				for j := i + 1; j < T; j++ {
					row[j] = negInf
				}
			}
			expSlice(pr)
			for i := range T {
				row := pr[i*T : i*T+i+1]
				var sum float64
				for _, e := range row {
					sum += float64(e)
				}
				inv := F(1 / sum)
				for j := range row {
					row[j] *= inv
				}
			}
			gemmInWorker(&packs[w], false, false, T, hd, T, 1, pr, T, lc.v[start*kv+g*hd:], kv, 0, lc.o[start*aw+h*hd:], aw)
		}
	})
}

// attentionBack writes dq and accumulates dk, dv (zeroed by the caller) from
// do; dps[w] is worker w's scratch of maxT² floats.
func (m *ModelOf[F]) attentionBack(p *pass[F], lc *layerCache[F], do, dq, dk, dv []F, dps [][]F) {
	c := m.Config
	hd, aw := c.HeadDimension(), c.attnWidth()
	kv := c.KVHeads * hd
	group := c.Heads / c.KVHeads
	scale := F(1 / math.Sqrt(float64(hd)))
	packs := make([]packScratch, seqWorkers(len(p.starts)))
	parallelSeqs(len(p.starts), func(w, s int) {
		start, T := p.starts[s], p.lns[s]
		dp := dps[w][:T*T]
		for h := range c.Heads {
			g := h / group
			pr := lc.probs[s][h*T*T : (h+1)*T*T]
			vOff, kOff, qOff := start*kv+g*hd, start*kv+g*hd, start*aw+h*hd
			gemmInWorker(&packs[w], false, true, T, T, hd, 1, do[qOff:], aw, lc.v[vOff:], kv, 0, dp, T)
			gemmInWorker(&packs[w], true, false, T, hd, T, 1, pr, T, do[qOff:], aw, 1, dv[vOff:], kv)
			// softmax backward: dS = P ∘ (dP − rowsum(dP ∘ P))
			for i := range T {
				prow, drow := pr[i*T:(i+1)*T], dp[i*T:(i+1)*T]
				var dot float64
				for j := 0; j <= i; j++ {
					dot += float64(prow[j]) * float64(drow[j])
				}
				for j := 0; j <= i; j++ {
					drow[j] = prow[j] * (drow[j] - F(dot))
				}
				for j := i + 1; j < T; j++ {
					drow[j] = 0
				}
			}
			gemmInWorker(&packs[w], false, false, T, hd, T, scale, dp, T, lc.k[kOff:], kv, 0, dq[qOff:], aw)
			gemmInWorker(&packs[w], true, false, T, hd, T, scale, dp, T, lc.q[qOff:], aw, 1, dk[kOff:], kv)
		}
	})
}

// rowLogits gathers the final hidden states of p's trained rows into p.hm
// and returns their logits through the LM head, [len(p.rows), Vocab].
func (m *ModelOf[F]) rowLogits(p *pass[F]) []F {
	c := m.Config
	d, V, M := c.Dim, c.Vocab, len(p.rows)
	p.hm = p.arena.take(M * d)
	parallelRows(M, d, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			r := p.rows[i]
			copy(p.hm[i*d:(i+1)*d], p.hf[r*d:(r+1)*d])
		}
	})
	logits := p.arena.take(M * V)
	linear(logits, p.hm, m.head.W, M, d, V)
	return logits
}

// crossEntropy computes the summed loss over trained rows; with grad it also
// returns dlogits for the mean loss. Rows run in parallel, one pass over
// each row's logits for the max and one for the sum (and the gradient); the
// rows' losses are summed in row order.
func (m *ModelOf[F]) crossEntropy(p *pass[F], grad bool) (float64, []F) {
	V, M := m.Config.Vocab, len(p.rows)
	p.logits = m.rowLogits(p)
	inv := F(1 / float64(M))
	if cap(p.rowLoss) < M {
		p.rowLoss = make([]float64, M)
	}
	rowLoss := p.rowLoss[:M]
	parallelRows(M, V, func(lo, hi int) {
		e := make([]F, V) // exps of one row
		for i := lo; i < hi; i++ {
			row := p.logits[i*V : (i+1)*V]
			mx := row[0]
			for _, v := range row {
				mx = max(mx, v)
			}
			for j, v := range row {
				e[j] = v - mx
			}
			expSlice(e)
			var sum float64
			for _, v := range e {
				sum += float64(v)
			}
			lse := float64(mx) + math.Log(sum)
			rowLoss[i] = lse - float64(row[p.targets[i]])
			if grad {
				for j, v := range row {
					row[j] = F(float64(v) - lse)
				}
				expSlice(row)
				for j := range row {
					row[j] *= inv
				}
				row[p.targets[i]] -= inv
			}
		}
	})
	var loss float64
	for _, l := range rowLoss {
		loss += l
	}
	return loss, p.logits
}

// backward adds the gradient of the mean loss to every Param.G and returns the summed loss.
func (m *ModelOf[F]) backward(p *pass[F]) float64 {
	loss, dlogits := m.crossEntropy(p, true)
	m.backwardFromLogits(p, dlogits)
	return loss
}

// backwardFromLogits adds to every Param.G the gradient of a loss whose
// gradient with respect to the trained rows' logits ([len(p.rows), Vocab],
// p.hm the rows' final hidden states) is dlogits.
func (m *ModelOf[F]) backwardFromLogits(p *pass[F], dlogits []F) {
	c := m.Config
	hd, aw := c.HeadDimension(), c.attnWidth()
	n, d, kv, f, V, M := p.n, c.Dim, c.KVHeads*hd, c.FF, c.Vocab, len(p.rows)
	a := &p.arena
	dhm := a.take(M * d)
	linearBack(dhm, m.head.G, dlogits, p.hm, m.head.W, M, d, V, 0)
	dhf := a.zeros(n * d)
	parallelRows(M, d, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			r := p.rows[i]
			copy(dhf[r*d:(r+1)*d], dhm[i*d:(i+1)*d])
		}
	})
	dx := a.take(n * d)
	rmsNormBack(dx, m.finalNorm.G, dhf, p.xf, p.rf, m.finalNorm.W, n, d)
	da, dg, du := a.take(n*f), a.take(n*f), a.take(n*f)
	dh := a.take(n * d)
	do, dq, dk, dv := a.take(n*aw), a.take(n*aw), a.take(n*kv), a.take(n*kv)
	var dqpre, dkpre []F // gradients before the q/k norm
	if c.QKNorm {
		dqpre, dkpre = a.take(n*aw), a.take(n*kv)
	}
	dxmid := a.take(n * d)
	dps := make([][]F, seqWorkers(len(p.starts))) // each aligned (see alignBytes)
	for w := range dps {
		dps[w] = a.take(p.maxT * p.maxT)
	}
	for li := c.Layers - 1; li >= 0; li-- {
		l, lc := m.layers[li], &p.layers[li]
		// MLP branch: x = xmid + down(silu(g)·u)
		linearBack(da, l.wd.G, dx, lc.a, l.wd.W, n, f, d, 0)
		swigluBackward(lc.g, lc.u, lc.sg, da, dg, du)
		linearBack(dh, l.wg.G, dg, lc.h2, l.wg.W, n, d, f, 0)
		linearBack(dh, l.wu.G, du, lc.h2, l.wu.W, n, d, f, 1)
		rmsNormBack(dxmid, l.mlpNorm.G, dh, lc.xmid, lc.r2, l.mlpNorm.W, n, d)
		addTo(dxmid, dx)
		// attention branch: xmid = xin + o_proj(attn)
		linearBack(do, l.wo.G, dxmid, lc.o, l.wo.W, n, aw, d, 0)
		if l.bo != nil {
			biasBack(l.bo.G, dxmid)
		}
		clear(dk)
		clear(dv)
		m.attentionBack(p, lc, do, dq, dk, dv, dps)
		m.rope(dq, p, c.Heads, true)
		m.rope(dk, p, c.KVHeads, true)
		dqp, dkp := dq, dk // gradients of the projections' outputs
		if l.qNorm != nil {
			rmsNormBack(dqpre, l.qNorm.G, dq, lc.qpre, lc.rq, l.qNorm.W, n*c.Heads, hd)
			rmsNormBack(dkpre, l.kNorm.G, dk, lc.kpre, lc.rk, l.kNorm.W, n*c.KVHeads, hd)
			dqp, dkp = dqpre, dkpre
		}
		if l.bq != nil {
			biasBack(l.bq.G, dqp)
			biasBack(l.bk.G, dkp)
			biasBack(l.bv.G, dv)
		}
		linearBack(dh, l.wq.G, dqp, lc.h1, l.wq.W, n, d, aw, 0)
		linearBack(dh, l.wk.G, dkp, lc.h1, l.wk.W, n, d, kv, 1)
		linearBack(dh, l.wv.G, dv, lc.h1, l.wv.W, n, d, kv, 1)
		rmsNormBack(dx, l.attnNorm.G, dh, lc.xin, lc.r1, l.attnNorm.W, n, d)
		addTo(dx, dxmid)
	}
	// The embedding's gradient by columns: a token's row sums its positions
	// in order.
	parallelCols(n, d, func(lo, hi int) {
		for i, tok := range p.tokens {
			g := m.embed.G[int(tok)*d+lo : int(tok)*d+hi]
			for j, v := range dx[i*d+lo : i*d+hi] {
				g[j] += v
			}
		}
	})
}
