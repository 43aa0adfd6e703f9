package train

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"
)

// Options configure Run. Zero values take the documented defaults.
type Options struct {
	Steps       int     // optimiser steps (required)
	BatchSize   int     // sequences per step (default 32)
	LR          float64 // peak learning rate (default 3e-3)
	MinLRRatio  float64 // final LR as a fraction of the peak (default 0.1)
	Warmup      int     // warmup steps (default Steps/20)
	WeightDecay float64 // AdamW decoupled decay (default 0.05)
	ClipNorm    float64 // global gradient-norm clip (default 1)
	Seed        uint64  // data-order seed
	LogEvery    int     // log every N steps (default 50)
	// Eval, when set, is scored (mean loss per trained token) every EvalEvery
	// steps (default 10·LogEvery) and at the end.
	Eval      []Sequence
	EvalEvery int
	Logger    *slog.Logger // default slog.Default()
	// Snapshot, when set, is called after every SnapshotEvery-th step (not
	// after the last); an error stops the run.
	Snapshot      func(step int) error
	SnapshotEvery int
}

// Result summarises a run.
type Result struct {
	Steps     int
	Tokens    int     // trained (loss) tokens seen
	LastLoss  float64 // mean loss per trained token over the last LogEvery steps
	EvalLoss  float64 // mean eval loss at the end (NaN without Eval)
	Elapsed   time.Duration
	StepsPerS float64
}

func (o *Options) defaults() {
	if o.BatchSize <= 0 {
		o.BatchSize = 32
	}
	if o.LR <= 0 {
		o.LR = 3e-3
	}
	if o.MinLRRatio <= 0 {
		o.MinLRRatio = 0.1
	}
	if o.Warmup <= 0 {
		o.Warmup = max(o.Steps/20, 1)
	}
	if o.WeightDecay == 0 {
		o.WeightDecay = 0.05
	}
	if o.ClipNorm == 0 {
		o.ClipNorm = 1
	}
	if o.LogEvery <= 0 {
		o.LogEvery = 50
	}
	if o.EvalEvery <= 0 {
		o.EvalEvery = 10 * o.LogEvery
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// EvalLoss returns the mean loss per trained token over seqs, in batches.
func (m *ModelOf[F]) EvalLoss(seqs []Sequence, batch int) (float64, error) {
	var sum float64
	var n int
	for i := 0; i < len(seqs); i += batch {
		l, c, err := m.Loss(seqs[i:min(i+batch, len(seqs))])
		if err != nil {
			return 0, err
		}
		sum += l
		n += c
	}
	if n == 0 {
		return math.NaN(), nil
	}
	return sum / float64(n), nil
}

// Run trains m on data with AdamW under a cosine schedule. The data order is
// a seeded shuffle per epoch, so the same model, data and options give the
// same weights. It stops early, returning ctx.Err(), when ctx is cancelled.
func Run[F Float](ctx context.Context, m *ModelOf[F], data []Sequence, o Options) (Result, error) {
	o.defaults()
	if o.Steps <= 0 {
		return Result{}, fmt.Errorf("train: steps %d ≤ 0", o.Steps)
	}
	if len(data) == 0 {
		return Result{}, fmt.Errorf("train: no training data")
	}
	opt := AdamW{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: o.WeightDecay}
	sched := Cosine{Peak: o.LR, MinRatio: o.MinLRRatio, Warmup: o.Warmup, Total: o.Steps}
	r := rand.New(rand.NewPCG(o.Seed, 0xda942042e4dd58b5))
	order := r.Perm(len(data))
	pos := 0
	res := Result{EvalLoss: math.NaN()}
	start := time.Now()
	var winLoss float64
	var winCount int
	batch := make([]Sequence, 0, o.BatchSize)
	for step := 1; step <= o.Steps; step++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		batch = batch[:0]
		for len(batch) < o.BatchSize {
			if pos == len(order) {
				order = r.Perm(len(data))
				pos = 0
			}
			batch = append(batch, data[order[pos]])
			pos++
		}
		m.ZeroGrad()
		loss, count, err := m.Step(batch)
		if err != nil {
			return res, fmt.Errorf("train: step %d: %w", step, err)
		}
		norm := ClipGradNorm(m.Params, o.ClipNorm)
		lr := sched.At(step)
		UpdateParams(opt, m.Params, lr, step)
		res.Steps, res.Tokens = step, res.Tokens+count
		winLoss += loss
		winCount += count
		if step%o.LogEvery == 0 || step == o.Steps {
			res.LastLoss = winLoss / float64(max(winCount, 1))
			el := time.Since(start)
			o.Logger.Info("train", "step", step, "loss", fmt.Sprintf("%.4f", res.LastLoss), "lr", fmt.Sprintf("%.2e", lr),
				"grad_norm", fmt.Sprintf("%.3f", norm), "tokens", res.Tokens, "elapsed", el.Round(time.Second).String(),
				"eta", (time.Duration(float64(el) / float64(step) * float64(o.Steps-step))).Round(time.Second).String())
			winLoss, winCount = 0, 0
		}
		if o.Snapshot != nil && o.SnapshotEvery > 0 && step%o.SnapshotEvery == 0 && step < o.Steps {
			if err := o.Snapshot(step); err != nil {
				return res, fmt.Errorf("train: snapshot at step %d: %w", step, err)
			}
		}
		if len(o.Eval) > 0 && (step%o.EvalEvery == 0 || step == o.Steps) {
			ev, err := m.EvalLoss(o.Eval, o.BatchSize)
			if err != nil {
				return res, fmt.Errorf("train: eval at step %d: %w", step, err)
			}
			res.EvalLoss = ev
			o.Logger.Info("eval", "step", step, "loss", fmt.Sprintf("%.4f", ev))
		}
	}
	res.Elapsed = time.Since(start)
	res.StepsPerS = float64(res.Steps) / res.Elapsed.Seconds()
	return res, nil
}
