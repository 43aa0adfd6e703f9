package learner

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/traj"
)

func tinyTrainModel(t testing.TB, seed uint64) *train.Model {
	t.Helper()
	m, err := train.NewModel(train.Config{Vocab: 29, Dim: 16, Layers: 2, Heads: 2, KVHeads: 1, FF: 24, MaxPos: 48, RopeTheta: 10000, NormEps: 1e-5}, seed)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 3))
	for _, p := range m.Params {
		if len(p.Shape) > 1 {
			for i := range p.W {
				p.W[i] = float32(r.NormFloat64() * 0.3)
			}
		}
	}
	return m
}

func meanLogprob(t testing.TB, m *train.Model, recs []traj.AdvantageRecord) float64 {
	t.Helper()
	var sum float64
	var n int
	for _, r := range recs {
		full := make([]uint8, len(r.InputIDs))
		copy(full[r.PromptLen:], r.LossMask)
		lp, err := m.ForwardLogprobs([]train.Sequence{{Tokens: r.InputIDs, LossMask: full}}, []float64{*r.Temperature})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lp.Logprobs {
			sum += l
			n++
		}
	}
	return sum / float64(n)
}

// TestUpdateOnPolicy: on the learner's own samples the ratio is 1, nothing
// clips, the mismatch is 0, and a positive advantage raises the logprobs.
func TestUpdateOnPolicy(t *testing.T) {
	for _, temp := range []float64{1, 0.7} {
		m := tinyTrainModel(t, 1)
		recs := onPolicyRecords(t, m, 12, temp, func(int) float32 { return 1 })
		before := meanLogprob(t, m, recs)
		opts := DefaultOptions()
		opts.LR = 1e-3
		l, err := New(m, nil, 0, opts)
		if err != nil {
			t.Fatal(err)
		}
		met, err := l.Update(context.Background(), recs)
		if err != nil {
			t.Fatal(err)
		}
		if met.ClipFracHigh+met.ClipFracLow+met.DualClipFrac != 0 || math.Abs(met.RatioMean-1) > 1e-6 || met.Mismatch.MaxAbs > 1e-6 {
			t.Errorf("T=%g on-policy metrics %+v", temp, met)
		}
		if met.Steps != 1 || met.TokensTrained == 0 || met.Tokens <= met.TokensTrained || met.Entropy <= 0 {
			t.Errorf("T=%g counts %+v", temp, met)
		}
		if after := meanLogprob(t, m, recs); !(after > before) {
			t.Errorf("T=%g mean logprob %.5f -> %.5f, want a rise", temp, before, after)
		}
	}
}

// TestUpdateNegativeAdvantageLowersLogprobs with minibatches, epochs and TIS.
func TestUpdateNegativeAdvantageLowersLogprobs(t *testing.T) {
	m := tinyTrainModel(t, 2)
	recs := onPolicyRecords(t, m, 16, 1, func(int) float32 { return -1 })
	before := meanLogprob(t, m, recs)
	opts := DefaultOptions()
	opts.LR, opts.Minibatches, opts.Epochs, opts.Loss.TISCap = 1e-3, 4, 2, 2
	l, err := New(m, nil, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	met, err := l.Update(context.Background(), recs)
	if err != nil {
		t.Fatal(err)
	}
	if met.Steps != 8 || met.Mismatch.MaxAbs > 1e-6 {
		t.Errorf("metrics %+v", met)
	}
	if after := meanLogprob(t, m, recs); !(after < before) {
		t.Errorf("mean logprob %.5f -> %.5f, want a fall", before, after)
	}
}

// TestUpdateDeterministic: the same seed, weights and records give the same
// weights bit for bit.
func TestUpdateDeterministic(t *testing.T) {
	run := func() []float32 {
		m := tinyTrainModel(t, 3)
		recs := onPolicyRecords(t, m, 10, 1, func(i int) float32 { return float32(i%3) - 1 })
		opts := DefaultOptions()
		opts.Minibatches, opts.Seed, opts.MicroBatchTokens = 3, 5, 40
		l, err := New(m, nil, 0, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Update(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
		var w []float32
		for _, p := range m.Params {
			w = append(w, p.W...)
		}
		return w
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("weight %d: %g vs %g", i, a[i], b[i])
		}
	}
}

// TestMicroBatchesGiveTheSameGradient: splitting a minibatch into
// micro-batches accumulates the same update (up to float rounding).
func TestMicroBatchesGiveTheSameGradient(t *testing.T) {
	for _, agg := range []Aggregation{TokenMean, SeqMeanTokenMean, SeqMeanTokenSumNorm} {
		weights := func(micro int) []float32 {
			m := tinyTrainModel(t, 4)
			recs := onPolicyRecords(t, m, 9, 1, func(i int) float32 { return float32(i%4) - 1.5 })
			opts := DefaultOptions()
			opts.MicroBatchTokens, opts.Loss.Agg, opts.LR = micro, agg, 1e-2
			l, _ := New(m, nil, 0, opts)
			if _, err := l.Update(context.Background(), recs); err != nil {
				t.Fatal(err)
			}
			var w []float32
			for _, p := range m.Params {
				w = append(w, p.G...)
			}
			return w
		}
		a, b := weights(4096), weights(20)
		for i := range a {
			if math.Abs(float64(a[i]-b[i])) > 1e-6+1e-4*math.Abs(float64(a[i])) {
				t.Fatalf("%s: gradient %d: %g whole vs %g in micro-batches", agg, i, a[i], b[i])
			}
		}
	}
}

func TestUpdateStaleness(t *testing.T) {
	m := tinyTrainModel(t, 1)
	recs := onPolicyRecords(t, m, 6, 1, func(int) float32 { return 1 })
	for i := range recs {
		recs[i].PolicyVersion = int64(5 - i) // lags 0..5 behind version 5
	}
	opts := DefaultOptions()
	opts.MaxStaleness = 2
	l, _ := New(m, nil, 5, opts)
	met, err := l.Update(context.Background(), recs)
	if err != nil {
		t.Fatal(err)
	}
	if met.Dropped != 3 || met.Records != 6 || met.Staleness["0"] != 1 || met.Staleness["5"] != 1 {
		t.Fatalf("dropped %d, staleness %v", met.Dropped, met.Staleness)
	}
	var kept int
	for _, r := range recs[:3] {
		kept += len(r.LossMask) - 3
	}
	if met.TokensTrained != kept {
		t.Errorf("trained %d tokens, want %d (the kept records' mask-1 tokens)", met.TokensTrained, kept)
	}
}

func TestUpdateRefusesBadRecords(t *testing.T) {
	m := tinyTrainModel(t, 1)
	cases := map[string]func(r *traj.AdvantageRecord){
		"vocabulary": func(r *traj.AdvantageRecord) { r.InputIDs[1] = 29 },
		"context": func(r *traj.AdvantageRecord) {
			r.InputIDs = append(make([]int32, 40), r.InputIDs...)
			r.PromptLen += 40
		},
		"greedy":      func(r *traj.AdvantageRecord) { z := 0.0; r.Temperature = &z },
		"temperature": func(r *traj.AdvantageRecord) { r.Temperature = nil; r.Schema = traj.AdvantageSchemaV1 },
		"lengths":     func(r *traj.AdvantageRecord) { r.Advantages = r.Advantages[1:] },
	}
	for name, mutate := range cases {
		recs := onPolicyRecords(t, m, 3, 1, func(int) float32 { return 1 })
		mutate(&recs[1])
		l, _ := New(m, nil, 0, DefaultOptions())
		before := append([]float32(nil), m.Params[1].W...)
		_, err := l.Update(context.Background(), recs)
		var re *RecordError
		if !errors.As(err, &re) || re.TrajectoryID != recs[1].TrajectoryID {
			t.Errorf("%s: error %v, want a RecordError naming %s", name, err, recs[1].TrajectoryID)
			continue
		}
		t.Logf("%s: %v", name, err)
		for i, w := range m.Params[1].W {
			if w != before[i] {
				t.Fatalf("%s: weights changed before the error", name)
			}
		}
	}
}

// TestKLInLossPullsTowardReference: with only the KL term (advantages 0),
// an update moves the policy toward the reference.
func TestKLInLossPullsTowardReference(t *testing.T) {
	m := tinyTrainModel(t, 1)
	ref := tinyTrainModel(t, 9)
	recs := onPolicyRecords(t, m, 8, 1, func(int) float32 { return 0 })
	opts := DefaultOptions()
	opts.Loss.KLBeta, opts.LR = 1, 3e-3
	l, _ := New(m, ref, 0, opts)
	first, err := l.Update(context.Background(), recs)
	if err != nil {
		t.Fatal(err)
	}
	var last Metrics
	for range 5 {
		if last, err = l.Update(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
	}
	if !(first.KL > 0) || !(last.KL < first.KL) {
		t.Errorf("k3 KL %g -> %g, want it to fall", first.KL, last.KL)
	}
}

// TestKLMetricOverRecordsWithReferences: without a reference model and with
// kl-beta 0, the KL metric covers the records that carry ref_logprobs (it
// was 0 for a batch mixing records with and without them).
func TestKLMetricOverRecordsWithReferences(t *testing.T) {
	m := tinyTrainModel(t, 1)
	recs := onPolicyRecords(t, m, 6, 1, func(int) float32 { return 1 })
	for i := range recs[:3] {
		r := &recs[i]
		r.RefLogprobs = make([]float32, len(r.OldLogprobs))
		for j, lp := range r.OldLogprobs {
			if r.LossMask[j] != 0 {
				r.RefLogprobs[j] = lp - 0.5
			}
		}
	}
	l, _ := New(m, nil, 0, DefaultOptions())
	met, err := l.Update(context.Background(), recs)
	if err != nil {
		t.Fatal(err)
	}
	// d = logp − ref = 0.5 on every token that has a reference
	want := math.Exp(-0.5) + 0.5 - 1
	if math.Abs(met.KL-want) > 1e-4 {
		t.Errorf("kl %g, want %g (k3 at d = 0.5 over the records with references)", met.KL, want)
	}
}
