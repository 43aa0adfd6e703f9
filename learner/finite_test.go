package learner

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/policystore"
)

// A diverged update is refused: an absurd learning rate overflows the
// weights, a NaN weight makes the loss NaN; Update returns a NonFiniteError
// naming the update, the iteration and the quantity, and Publish refuses
// non-finite weights, so the store's latest stays on the last good version
// (#30: before, the NaN version was published and latest pointed to it).
func TestNonFiniteUpdateIsRefused(t *testing.T) {
	ctx := context.Background()
	m := tinyTrainModel(t, 1)
	recs := onPolicyRecords(t, m, 6, 1, func(i int) float32 { return float32(i%3) - 1 })
	opts := DefaultOptions()
	opts.LR = 1e300
	l, err := New(m, nil, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	l.SetIteration(7)
	_, err = l.Update(ctx, recs)
	var nf *NonFiniteError
	if !errors.As(err, &nf) || nf.Iteration != 7 || nf.Update != 1 || !strings.HasPrefix(nf.Quantity, "weight ") {
		t.Fatalf("LR 1e300: error %v, want a NonFiniteError naming a weight in update 1, iteration 7", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "iteration 7") || !strings.Contains(msg, "update 1") {
		t.Errorf("message %q names neither the iteration nor the update", msg)
	}

	// A NaN weight: the loss is NaN.
	m2 := tinyTrainModel(t, 2)
	m2.Params[len(m2.Params)-1].W[0] = float32(math.NaN())
	l2, err := New(m2, nil, 0, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l2.Update(ctx, recs); !errors.As(err, &nf) || nf.Quantity != "loss" {
		t.Errorf("NaN weight: error %v, want a NonFiniteError on the loss", err)
	}
}

// SkipNonFinite skips a diverged update instead: the weights and the
// optimiser are as before it, the metrics count it and hold no NaN.
func TestNonFiniteUpdateSkipped(t *testing.T) {
	m := tinyTrainModel(t, 1)
	recs := onPolicyRecords(t, m, 6, 1, func(i int) float32 { return float32(i%3) - 1 })
	opts := DefaultOptions()
	opts.LR, opts.SkipNonFinite = 1e300, true
	l, err := New(m, nil, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	before := append([]float32(nil), m.Params[1].W...)
	met, err := l.Update(context.Background(), recs)
	if err != nil {
		t.Fatal(err)
	}
	if met.SkippedNonFinite != 1 || met.Steps != 0 || l.Steps() != 0 || math.IsNaN(met.Loss) || math.IsNaN(met.GradNorm) {
		t.Errorf("skipped update: metrics %+v, learner steps %d", met, l.Steps())
	}
	for i, w := range m.Params[1].W {
		if w != before[i] {
			t.Fatalf("weights changed by a skipped update")
		}
	}
	for _, p := range m.Params {
		for i := range p.M {
			if p.M[i] != 0 || p.V[i] != 0 {
				t.Fatalf("%s: optimiser moments changed by a skipped update", p.Name)
			}
		}
	}
}

// Publish refuses weights that are not finite; latest stays where it was.
func TestPublishRefusesNonFiniteWeights(t *testing.T) {
	ctx := context.Background()
	l, base := freshLearner(t, writeTinyBase(t))
	store, err := policystore.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	good, err := l.Publish(ctx, store, base, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := l.Model().(*train.Model).Params[2]
	p.W[3] = float32(math.Inf(1))
	_, err = l.Publish(ctx, store, base, nil, 0)
	var nf *NonFiniteError
	if !errors.As(err, &nf) || nf.Quantity != "weight "+p.Name {
		t.Fatalf("publish of an Inf weight: %v, want a NonFiniteError naming %s", err, p.Name)
	}
	if latest, err := store.Latest(); err != nil || latest.Number != good.Number {
		t.Errorf("latest %v, %v; want version %d", latest.Number, err, good.Number)
	}
	if l.Version() != good.Number {
		t.Errorf("learner version %d after a refused publish, want %d", l.Version(), good.Number)
	}
}

// The same in float64 precision: the skipped update restores the float64
// weights exactly.
func TestNonFiniteUpdateSkippedFloat64(t *testing.T) {
	m32 := tinyTrainModel(t, 1)
	recs := onPolicyRecords(t, m32, 6, 1, func(i int) float32 { return float32(i%3) - 1 })
	net, err := train.NewNet(m32.Config, 1, train.Float64)
	if err != nil {
		t.Fatal(err)
	}
	m := net.(*train.Model64)
	opts := DefaultOptions()
	opts.LR, opts.SkipNonFinite = 1e300, true
	l, err := New(m, nil, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	before := append([]float64(nil), m.Params[1].W...)
	met, err := l.Update(context.Background(), recs)
	if err != nil || met.SkippedNonFinite != 1 {
		t.Fatalf("float64, LR 1e300: %+v, %v; want the update skipped", met, err)
	}
	for i, w := range m.Params[1].W {
		if w != before[i] {
			t.Fatalf("float64 weights changed by a skipped update")
		}
	}
	opts.SkipNonFinite = false
	l, _ = New(m, nil, 0, opts)
	var nf *NonFiniteError
	if _, err := l.Update(context.Background(), recs); !errors.As(err, &nf) {
		t.Errorf("float64, LR 1e300, no skip: %v, want a NonFiniteError", err)
	}
}
