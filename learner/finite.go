package learner

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/toolrl/toolrl/model/train"
)

// NonFiniteError is a diverged update: a loss, gradient norm or weight that
// is NaN or infinite (a learning rate far too high, an overflow). The update
// is refused, so nothing built on it is published: the store's latest stays
// on the last good version.
type NonFiniteError struct {
	// Update is the learner's update number (Metrics.Update); Iteration the
	// training loop's iteration (0 outside a loop).
	Update    int64
	Iteration int
	// Version is the policy version the update started from.
	Version int64
	// Quantity is what was not finite: "loss", "gradient norm", or
	// "weight NAME".
	Quantity string
	Value    float64
}

func (e *NonFiniteError) Error() string {
	where := fmt.Sprintf("update %d", e.Update)
	if e.Iteration > 0 {
		where = fmt.Sprintf("iteration %d, update %d", e.Iteration, e.Update)
	}
	return fmt.Sprintf("learner: %s: %s is %v: the training diverged (a learning rate too high?); the update is refused and nothing is published (the last good version is %d)",
		where, e.Quantity, e.Value, e.Version)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// nonFinite returns a NonFiniteError for the quantity if v is not finite.
func (l *Learner) nonFinite(quantity string, v float64) error {
	if finite(v) {
		return nil
	}
	return &NonFiniteError{Update: l.batches, Iteration: l.iteration, Version: l.version, Quantity: quantity, Value: v}
}

// checkWeights returns a NonFiniteError for the first weight that is not
// finite (in float32, as Publish writes it: a float64 weight past float32's
// range is infinite there).
func (l *Learner) checkWeights() error {
	switch m := l.model.(type) {
	case *train.Model:
		return checkParams(l, m.Params)
	case *train.Model64:
		return checkParams(l, m.Params)
	}
	w := l.model.LlamaWeights()
	names := slices.Sorted(maps.Keys(w))
	for _, name := range names {
		for _, v := range w[name].Data {
			if err := l.nonFinite("weight "+name, float64(v)); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkParams[F train.Float](l *Learner, params []*train.ParamOf[F]) error {
	for _, p := range params {
		for _, w := range p.W {
			if v := float64(float32(w)); !finite(v) {
				return l.nonFinite("weight "+p.Name, v)
			}
		}
	}
	return nil
}

// checkStep checks one optimiser step: its loss and gradient norm before
// the step, the weights after it (an update can overflow them with finite
// gradients).
func (l *Learner) checkStep(loss, gradNorm float64) error {
	if err := l.nonFinite("loss", loss); err != nil {
		return err
	}
	return l.nonFinite("gradient norm", gradNorm)
}

// snapshot is the learner's trainable state before an update, for
// Options.SkipNonFinite to restore: restore puts back the weights and AdamW
// moments (exactly, in the model's precision), step the optimiser's count.
type snapshot struct {
	restore func() error
	step    int
}

func (l *Learner) takeSnapshot() *snapshot {
	if !l.opts.SkipNonFinite {
		return nil
	}
	s := &snapshot{step: l.step}
	switch m := l.model.(type) {
	case *train.Model:
		s.restore = saveParams(m.Params)
	case *train.Model64:
		s.restore = saveParams(m.Params)
	default: // another Net: through its float32 state
		w, mom, v := map[string][]float32{}, map[string][]float32{}, map[string][]float32{}
		for name, t := range m.LlamaWeights() {
			w[name] = slices.Clone(t.Data)
		}
		for _, mo := range m.Moments() {
			mom[mo.Name], v[mo.Name] = slices.Clone(mo.M), slices.Clone(mo.V)
		}
		s.restore = func() error { return m.SetState(w, mom, v) }
	}
	return s
}

func saveParams[F train.Float](params []*train.ParamOf[F]) func() error {
	w, m, v := make([][]F, len(params)), make([][]F, len(params)), make([][]F, len(params))
	for i, p := range params {
		w[i], m[i], v[i] = slices.Clone(p.W), slices.Clone(p.M), slices.Clone(p.V)
	}
	return func() error {
		for i, p := range params {
			copy(p.W, w[i])
			copy(p.M, m[i])
			copy(p.V, v[i])
		}
		return nil
	}
}

// refuse ends an update that err (a NonFiniteError) stopped: without a
// snapshot (the default) it returns err, and the caller stops the run; with
// Options.SkipNonFinite it restores the weights and the optimiser from the
// snapshot and returns the batch's counts with the update skipped and
// counted, no loss metric (they are not finite), and no error.
func (l *Learner) refuse(met Metrics, snap *snapshot, err error) (Metrics, error) {
	if snap == nil {
		return met, err
	}
	if rerr := snap.restore(); rerr != nil {
		return met, fmt.Errorf("%w; restoring the weights from before the update: %v", err, rerr)
	}
	l.step = snap.step
	return Metrics{Update: met.Update, PolicyVersion: met.PolicyVersion, Epochs: met.Epochs, Records: met.Records,
		Dropped: met.Dropped, Staleness: met.Staleness, Tokens: met.Tokens, TokensTrained: met.TokensTrained,
		Mismatch: met.Mismatch, SkippedNonFinite: 1}, nil
}
