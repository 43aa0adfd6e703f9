package train

import (
	"fmt"
	"math"
	"runtime"
	"sync"
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
	probs                                  [][]F // per sequence: [heads][T][T]
	// With QKNorm: q and k before their norm (projection plus bias) and
	// the per-head rsqrt of the norm, [n·heads].
	qpre, kpre, rq, rk []F
}

// pass holds a batch's layout and activations.
type pass[F Float] struct {
	n, maxT     int
	starts, lns []int
	tokens      []int32
	layers      []layerCache[F]
	xf, hf, rf  []F
	ropes       []ropeTables[F] // per sequence
	rows        []int           // positions whose next token is trained
	targets     []int32         // the trained next tokens
	hm, logits  []F
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
	c := m.Config
	out := make([]F, p.n*c.Vocab)
	linear(out, p.hf, m.head.W, p.n, c.Dim, c.Vocab)
	return out, nil
}

func (m *ModelOf[F]) forward(seqs []Sequence, train bool) (*pass[F], error) {
	c := m.Config
	p := &pass[F]{}
	for i, s := range seqs {
		if len(s.Tokens) > c.MaxPos {
			return nil, fmt.Errorf("train: sequence %d has %d tokens, max %d", i, len(s.Tokens), c.MaxPos)
		}
		if train && len(s.LossMask) != len(s.Tokens) {
			return nil, fmt.Errorf("train: sequence %d has %d tokens but %d mask values", i, len(s.Tokens), len(s.LossMask))
		}
		rt, err := m.tablesFor(len(s.Tokens))
		if err != nil {
			return nil, err
		}
		p.ropes = append(p.ropes, rt)
		p.starts = append(p.starts, p.n)
		p.lns = append(p.lns, len(s.Tokens))
		p.n += len(s.Tokens)
		p.maxT = max(p.maxT, len(s.Tokens))
		for t, tok := range s.Tokens {
			if tok < 0 || int(tok) >= c.Vocab {
				return nil, fmt.Errorf("train: sequence %d token %d is %d, vocab %d", i, t, tok, c.Vocab)
			}
			p.tokens = append(p.tokens, tok)
			if train && t > 0 && s.LossMask[t] != 0 {
				p.rows = append(p.rows, p.n-len(s.Tokens)+t-1)
				p.targets = append(p.targets, tok)
			}
		}
	}
	hd, aw := c.HeadDimension(), c.attnWidth()
	n, d, kv, f := p.n, c.Dim, c.KVHeads*hd, c.FF
	x := make([]F, n*d)
	for i, tok := range p.tokens {
		copy(x[i*d:(i+1)*d], m.embed.W[int(tok)*d:(int(tok)+1)*d])
	}
	p.layers = make([]layerCache[F], c.Layers)
	for li, l := range m.layers {
		lc := &p.layers[li]
		lc.xin = x
		lc.h1, lc.r1 = make([]F, n*d), make([]F, n)
		rmsNorm(lc.h1, lc.r1, x, l.attnNorm.W, n, d, c.NormEps)
		lc.q, lc.k, lc.v = make([]F, n*aw), make([]F, n*kv), make([]F, n*kv)
		linear(lc.q, lc.h1, l.wq.W, n, d, aw)
		linear(lc.k, lc.h1, l.wk.W, n, d, kv)
		linear(lc.v, lc.h1, l.wv.W, n, d, kv)
		if l.bq != nil {
			addBias(lc.q, l.bq.W)
			addBias(lc.k, l.bk.W)
			addBias(lc.v, l.bv.W)
		}
		if l.qNorm != nil {
			// Qwen3Attention: q_norm/k_norm over each head's HeadDim values.
			lc.qpre, lc.kpre = lc.q, lc.k
			lc.q, lc.rq = make([]F, n*aw), make([]F, n*c.Heads)
			lc.k, lc.rk = make([]F, n*kv), make([]F, n*c.KVHeads)
			rmsNorm(lc.q, lc.rq, lc.qpre, l.qNorm.W, n*c.Heads, hd, c.NormEps)
			rmsNorm(lc.k, lc.rk, lc.kpre, l.kNorm.W, n*c.KVHeads, hd, c.NormEps)
		}
		m.rope(lc.q, p, c.Heads, false)
		m.rope(lc.k, p, c.KVHeads, false)
		lc.o = make([]F, n*aw)
		lc.probs = make([][]F, len(p.starts))
		m.attention(p, lc)
		attn := make([]F, n*d)
		linear(attn, lc.o, l.wo.W, n, aw, d)
		if l.bo != nil {
			addBias(attn, l.bo.W)
		}
		lc.xmid = make([]F, n*d)
		for i := range attn {
			lc.xmid[i] = x[i] + attn[i]
		}
		lc.h2, lc.r2 = make([]F, n*d), make([]F, n)
		rmsNorm(lc.h2, lc.r2, lc.xmid, l.mlpNorm.W, n, d, c.NormEps)
		lc.g, lc.u, lc.a = make([]F, n*f), make([]F, n*f), make([]F, n*f)
		linear(lc.g, lc.h2, l.wg.W, n, d, f)
		linear(lc.u, lc.h2, l.wu.W, n, d, f)
		for i, g := range lc.g {
			lc.a[i] = silu(g) * lc.u[i]
		}
		mlp := make([]F, n*d)
		linear(mlp, lc.a, l.wd.W, n, f, d)
		x = make([]F, n*d)
		for i := range mlp {
			x[i] = lc.xmid[i] + mlp[i]
		}
	}
	p.xf = x
	p.hf, p.rf = make([]F, n*d), make([]F, n)
	rmsNorm(p.hf, p.rf, x, m.finalNorm.W, n, d, c.NormEps)
	return p, nil
}

func sigmoid[F Float](x F) F { return 1 / (1 + expF(-x)) }

func silu[F Float](x F) F { return x * sigmoid(x) }

// rmsNorm: y = x * rsqrt(mean(x²) + eps) * w per row; r keeps the rsqrt.
func rmsNorm[F Float](y, r, x, w []F, n, d int, eps float64) {
	for i := range n {
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
}

// addBias adds b to every row of y ([rows, len(b)]).
func addBias[F Float](y, b []F) {
	w := len(b)
	for i := 0; i < len(y); i += w {
		row := y[i : i+w]
		for j, v := range b {
			row[j] += v
		}
	}
}

// biasBack adds the column sums of dy ([rows, len(db)]) to db.
func biasBack[F Float](db, dy []F) {
	w := len(db)
	for i := 0; i < len(dy); i += w {
		for j, v := range dy[i : i+w] {
			db[j] += v
		}
	}
}

// rmsNormBack adds to dw and writes dx (overwrite) for y = rmsNorm(x).
// With g = dy·w: dx = r·g − x·r³·mean(g·x).
func rmsNormBack[F Float](dx, dw, dy, x, r, w []F, n, d int) {
	for i := range n {
		xr, dyr, ri := x[i*d:(i+1)*d], dy[i*d:(i+1)*d], r[i]
		var dot float64
		for j := range d {
			dw[j] += dyr[j] * xr[j] * ri
			dot += float64(dyr[j]*w[j]) * float64(xr[j])
		}
		k := F(dot/float64(d)) * ri * ri * ri
		out := dx[i*d : (i+1)*d]
		for j := range d {
			out[j] = ri*dyr[j]*w[j] - xr[j]*k
		}
	}
}

// rope rotates each head's halves in place (HF rotate_half): for i < hd/2,
// (a, b) = (x[i], x[i+hd/2]) becomes (a·cos − b·sin, b·cos + a·sin).
// inverse applies the transpose rotation (the backward pass).
func (m *ModelOf[F]) rope(x []F, p *pass[F], heads int, inverse bool) {
	hd := m.Config.HeadDimension()
	half := hd / 2
	width := heads * hd
	for s, start := range p.starts {
		rt := p.ropes[s]
		for t := range p.lns[s] {
			cs, sn := rt.cos[t*half:(t+1)*half], rt.sin[t*half:(t+1)*half]
			row := x[(start+t)*width : (start+t+1)*width]
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
	}
}

// parallelSeqs runs fn for every sequence index over GOMAXPROCS workers; each
// call writes only its own sequence's rows, so results do not depend on order.
func parallelSeqs(n int, fn func(worker, s int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := w; s < n; s += workers {
				fn(w, s)
			}
		}()
	}
	wg.Wait()
}

// attention computes causal softmax(q·kᵀ/sqrt(hd))·v per sequence and head,
// keeping the probabilities for backward.
func (m *ModelOf[F]) attention(p *pass[F], lc *layerCache[F]) {
	c := m.Config
	hd, aw := c.HeadDimension(), c.attnWidth()
	kv := c.KVHeads * hd
	group := c.Heads / c.KVHeads
	scale := F(1 / math.Sqrt(float64(hd)))
	parallelSeqs(len(p.starts), func(_, s int) {
		start, T := p.starts[s], p.lns[s]
		probs := make([]F, c.Heads*T*T)
		for h := range c.Heads {
			g := h / group
			pr := probs[h*T*T : (h+1)*T*T]
			gemmInWorker(false, true, T, T, hd, scale, lc.q[start*aw+h*hd:], aw, lc.k[start*kv+g*hd:], kv, 0, pr, T)
			for i := range T {
				row := pr[i*T : (i+1)*T]
				mx := row[0]
				for j := 1; j <= i; j++ {
					mx = max(mx, row[j])
				}
				var sum float64
				for j := 0; j <= i; j++ {
					e := expF(row[j] - mx)
					row[j] = e
					sum += float64(e)
				}
				inv := F(1 / sum)
				for j := 0; j <= i; j++ {
					row[j] *= inv
				}
				for j := i + 1; j < T; j++ {
					row[j] = 0
				}
			}
			gemmInWorker(false, false, T, hd, T, 1, pr, T, lc.v[start*kv+g*hd:], kv, 0, lc.o[start*aw+h*hd:], aw)
		}
		lc.probs[s] = probs
	})
}

// attentionBack writes dq and accumulates dk, dv (zeroed by the caller) from do.
func (m *ModelOf[F]) attentionBack(p *pass[F], lc *layerCache[F], do, dq, dk, dv []F) {
	c := m.Config
	hd, aw := c.HeadDimension(), c.attnWidth()
	kv := c.KVHeads * hd
	group := c.Heads / c.KVHeads
	scale := F(1 / math.Sqrt(float64(hd)))
	parallelSeqs(len(p.starts), func(_, s int) {
		start, T := p.starts[s], p.lns[s]
		dp := make([]F, T*T)
		for h := range c.Heads {
			g := h / group
			pr := lc.probs[s][h*T*T : (h+1)*T*T]
			vOff, kOff, qOff := start*kv+g*hd, start*kv+g*hd, start*aw+h*hd
			gemmInWorker(false, true, T, T, hd, 1, do[qOff:], aw, lc.v[vOff:], kv, 0, dp, T)
			gemmInWorker(true, false, T, hd, T, 1, pr, T, do[qOff:], aw, 1, dv[vOff:], kv)
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
			gemmInWorker(false, false, T, hd, T, scale, dp, T, lc.k[kOff:], kv, 0, dq[qOff:], aw)
			gemmInWorker(true, false, T, hd, T, scale, dp, T, lc.q[qOff:], aw, 1, dk[kOff:], kv)
		}
	})
}

// rowLogits gathers the final hidden states of p's trained rows into p.hm
// and returns their logits through the LM head, [len(p.rows), Vocab].
func (m *ModelOf[F]) rowLogits(p *pass[F]) []F {
	c := m.Config
	d, V, M := c.Dim, c.Vocab, len(p.rows)
	p.hm = make([]F, M*d)
	for i, r := range p.rows {
		copy(p.hm[i*d:(i+1)*d], p.hf[r*d:(r+1)*d])
	}
	logits := make([]F, M*V)
	linear(logits, p.hm, m.head.W, M, d, V)
	return logits
}

// crossEntropy computes the summed loss over trained rows; with grad it also
// returns dlogits for the mean loss.
func (m *ModelOf[F]) crossEntropy(p *pass[F], grad bool) (float64, []F) {
	V, M := m.Config.Vocab, len(p.rows)
	p.logits = m.rowLogits(p)
	var loss float64
	inv := F(1 / float64(M))
	for i := range M {
		row := p.logits[i*V : (i+1)*V]
		mx := row[0]
		for _, v := range row {
			mx = max(mx, v)
		}
		var sum float64
		for _, v := range row {
			sum += float64(expF(v - mx))
		}
		lse := float64(mx) + math.Log(sum)
		loss += lse - float64(row[p.targets[i]])
		if grad {
			for j, v := range row {
				row[j] = expF(F(float64(v)-lse)) * inv
			}
			row[p.targets[i]] -= inv
		}
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
	dhm := make([]F, M*d)
	linearBack(dhm, m.head.G, dlogits, p.hm, m.head.W, M, d, V, 0)
	dhf := make([]F, n*d)
	for i, r := range p.rows {
		copy(dhf[r*d:(r+1)*d], dhm[i*d:(i+1)*d])
	}
	dx := make([]F, n*d)
	rmsNormBack(dx, m.finalNorm.G, dhf, p.xf, p.rf, m.finalNorm.W, n, d)
	da, dg, du := make([]F, n*f), make([]F, n*f), make([]F, n*f)
	dh := make([]F, n*d)
	do, dq, dk, dv := make([]F, n*aw), make([]F, n*aw), make([]F, n*kv), make([]F, n*kv)
	var dqpre, dkpre []F // gradients before the q/k norm
	if c.QKNorm {
		dqpre, dkpre = make([]F, n*aw), make([]F, n*kv)
	}
	dxmid := make([]F, n*d)
	for li := c.Layers - 1; li >= 0; li-- {
		l, lc := m.layers[li], &p.layers[li]
		// MLP branch: x = xmid + down(silu(g)·u)
		linearBack(da, l.wd.G, dx, lc.a, l.wd.W, n, f, d, 0)
		for i, g := range lc.g {
			s := sigmoid(g)
			du[i] = da[i] * g * s
			dg[i] = da[i] * lc.u[i] * s * (1 + g*(1-s))
		}
		linearBack(dh, l.wg.G, dg, lc.h2, l.wg.W, n, d, f, 0)
		linearBack(dh, l.wu.G, du, lc.h2, l.wu.W, n, d, f, 1)
		rmsNormBack(dxmid, l.mlpNorm.G, dh, lc.xmid, lc.r2, l.mlpNorm.W, n, d)
		for i := range dxmid {
			dxmid[i] += dx[i]
		}
		// attention branch: xmid = xin + o_proj(attn)
		linearBack(do, l.wo.G, dxmid, lc.o, l.wo.W, n, aw, d, 0)
		if l.bo != nil {
			biasBack(l.bo.G, dxmid)
		}
		clear(dk)
		clear(dv)
		m.attentionBack(p, lc, do, dq, dk, dv)
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
		for i := range dx {
			dx[i] += dxmid[i]
		}
	}
	for i, tok := range p.tokens {
		g := m.embed.G[int(tok)*d : (int(tok)+1)*d]
		for j, v := range dx[i*d : (i+1)*d] {
			g[j] += v
		}
	}
}
