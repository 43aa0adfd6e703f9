package train

import "math"

// AdamW holds the optimiser's hyperparameters (Loshchilov & Hutter,
// "Decoupled Weight Decay Regularization", 2019).
type AdamW struct {
	Beta1, Beta2 float64 // moment decay rates (0.9, 0.95 typical)
	Eps          float64 // denominator epsilon
	WeightDecay  float64 // decoupled decay, applied to Params with Decay set
}

// Update applies one AdamW step at learning rate lr; step counts from 1 and
// sets the bias corrections. Gradients are read, not cleared.
//
//	m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
//	w ← w − lr·( m/(1−β1ᵗ) / (sqrt(v/(1−β2ᵗ)) + ε) + λ·w )
func (o AdamW) Update(params []*Param, lr float64, step int) { UpdateParams(o, params, lr, step) }

// UpdateParams is AdamW.Update on parameters of either precision, the
// moments and the step computed in F.
func UpdateParams[F Float](o AdamW, params []*ParamOf[F], lr float64, step int) {
	b1, b2 := F(o.Beta1), F(o.Beta2)
	c1 := 1 / (1 - math.Pow(o.Beta1, float64(step)))
	c2 := 1 / (1 - math.Pow(o.Beta2, float64(step)))
	for _, p := range params {
		wd := F(0)
		if p.Decay {
			wd = F(lr * o.WeightDecay)
		}
		a := F(lr * c1)
		sc2 := F(c2)
		eps := F(o.Eps)
		for i, g := range p.G {
			m := b1*p.M[i] + (1-b1)*g
			v := b2*p.V[i] + (1-b2)*g*g
			p.M[i], p.V[i] = m, v
			p.W[i] -= a*m/(F(math.Sqrt(float64(v*sc2)))+eps) + wd*p.W[i]
		}
	}
}

// ClipGradNorm scales all gradients so their global L2 norm is at most maxNorm
// (no-op when maxNorm ≤ 0) and returns the norm before clipping.
func ClipGradNorm[F Float](params []*ParamOf[F], maxNorm float64) float64 {
	var ss float64
	for _, p := range params {
		for _, g := range p.G {
			ss += float64(g) * float64(g)
		}
	}
	norm := math.Sqrt(ss)
	if maxNorm > 0 && norm > maxNorm {
		s := F(maxNorm / norm)
		for _, p := range params {
			for i := range p.G {
				p.G[i] *= s
			}
		}
	}
	return norm
}

// Cosine is a learning-rate schedule: linear warmup to Peak over Warmup steps,
// then cosine decay to Peak·MinRatio at Total steps.
type Cosine struct {
	Peak     float64
	MinRatio float64
	Warmup   int
	Total    int
}

// At returns the learning rate of step (1-based).
func (c Cosine) At(step int) float64 {
	if step <= c.Warmup {
		return c.Peak * float64(step) / float64(max(c.Warmup, 1))
	}
	span := max(c.Total-c.Warmup, 1)
	progress := math.Min(float64(step-c.Warmup)/float64(span), 1)
	min := c.Peak * c.MinRatio
	return min + (c.Peak-min)*0.5*(1+math.Cos(math.Pi*progress))
}
