package train

import (
	"fmt"

	"github.com/toolrl/toolrl/model/llama"
)

// Precision names the float type a model computes in.
type Precision string

const (
	// Float32 is the default: the packed SIMD GEMM (GOEXPERIMENT=simd) or
	// gonum's Sgemm, sums of squares and softmax denominators in float64.
	Float32 Precision = "float32"
	// Float64 runs the same math with float64 activations, gradients,
	// weights and AdamW moments over gonum's Dgemm, and math.Exp for exp.
	// It is for checking another trainer (a float64 PyTorch step) against
	// this one on the same batch, not for speed.
	Float64 Precision = "float64"
)

// ParsePrecision checks a --precision value.
func ParsePrecision(s string) (Precision, error) {
	switch p := Precision(s); p {
	case Float32, Float64:
		return p, nil
	}
	return "", fmt.Errorf("precision %q: want %s or %s", s, Float32, Float64)
}

// Net is a model of either precision as the learner drives it: weights,
// moments and checkpoints cross it as float32 (what a model folder and the
// learner's state file hold), gradients of logprobs as float64.
type Net interface {
	// Arch is the model's Config.
	Arch() Config
	Precision() Precision
	ForwardLogprobs(seqs []Sequence, temperatures []float64) (*LogprobPass, error)
	BackwardLogprobs(lp *LogprobPass, dlogp []float64) error
	ZeroGrad()
	// ClipGrad is ClipGradNorm over the model's parameters.
	ClipGrad(maxNorm float64) float64
	// AdamW takes one AdamW.Update step over the model's parameters.
	AdamW(o AdamW, lr float64, step int)
	// LlamaWeights are the weights in float32 (see ModelOf.LlamaWeights).
	LlamaWeights() llama.Weights
	// Moments returns every parameter's AdamW moments in float32, in
	// Params order.
	Moments() []Moments
	// SetState sets every parameter's weights and moments from float32
	// values by name; each must be present with the parameter's size.
	SetState(w, m, v map[string][]float32) error
	// RoundTo32 rounds the weights and moments to float32 values in place
	// (a no-op for a float32 model), so that the model continues from what
	// was written.
	RoundTo32()
}

var _, _ Net = (*Model)(nil), (*Model64)(nil)

// Moments are one parameter's AdamW moments in float32.
type Moments struct {
	Name  string
	Shape []int
	M, V  []float32
}

// NewNet returns a model of the given precision initialised from seed (see NewModelOf).
func NewNet(c Config, seed uint64, p Precision) (Net, error) {
	switch p {
	case Float32, "":
		return NewModelOf[float32](c, seed)
	case Float64:
		return NewModelOf[float64](c, seed)
	}
	return nil, fmt.Errorf("train: precision %q: want %s or %s", p, Float32, Float64)
}

// Arch returns m.Config.
func (m *ModelOf[F]) Arch() Config { return m.Config }

// Precision says which float type m computes in.
func (m *ModelOf[F]) Precision() Precision {
	if isFloat32[F]() {
		return Float32
	}
	return Float64
}

// ClipGrad is ClipGradNorm(m.Params, maxNorm).
func (m *ModelOf[F]) ClipGrad(maxNorm float64) float64 { return ClipGradNorm(m.Params, maxNorm) }

// AdamW is UpdateParams(o, m.Params, lr, step).
func (m *ModelOf[F]) AdamW(o AdamW, lr float64, step int) { UpdateParams(o, m.Params, lr, step) }

// Moments returns the AdamW moments in float32 (aliases of a float32 model's).
func (m *ModelOf[F]) Moments() []Moments {
	out := make([]Moments, len(m.Params))
	for i, p := range m.Params {
		out[i] = Moments{Name: p.Name, Shape: p.Shape, M: To32(p.M), V: To32(p.V)}
	}
	return out
}

// SetState sets weights and moments by name from float32 values.
func (m *ModelOf[F]) SetState(w, mom, v map[string][]float32) error {
	for _, p := range m.Params {
		for _, t := range []struct {
			kind string
			src  map[string][]float32
			dst  []F
		}{{"weight", w, p.W}, {"first moment", mom, p.M}, {"second moment", v, p.V}} {
			src, ok := t.src[p.Name]
			if !ok {
				return fmt.Errorf("train: %s %s missing", t.kind, p.Name)
			}
			if len(src) != len(t.dst) {
				return fmt.Errorf("train: %s %s has %d values, want %d", t.kind, p.Name, len(src), len(t.dst))
			}
		}
	}
	for _, p := range m.Params {
		for i := range p.W {
			p.W[i], p.M[i], p.V[i] = F(w[p.Name][i]), F(mom[p.Name][i]), F(v[p.Name][i])
		}
	}
	return nil
}

// RoundTo32 rounds weights and moments to float32 values.
func (m *ModelOf[F]) RoundTo32() {
	if isFloat32[F]() {
		return
	}
	for _, p := range m.Params {
		for _, x := range [][]F{p.W, p.M, p.V} {
			for i, v := range x {
				x[i] = F(float32(v))
			}
		}
	}
}
