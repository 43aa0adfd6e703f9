package learner

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/traj"
)

// Options configure a Learner. Zero is meaningful for several fields, so
// start from DefaultOptions.
type Options struct {
	Loss LossConfig
	// LR is AdamW's learning rate; constant after an optional linear warmup
	// of WarmupSteps optimiser steps. Default 1e-4 (verl and TRL default to
	// 1e-6 for billion-parameter models; the small models the learner trains
	// need more).
	LR          float64
	WarmupSteps int
	// WeightDecay is AdamW's decoupled decay on matrices (default 0.01, as
	// verl's actor optimiser); Beta1/Beta2/Eps its moments (0.9, 0.999, 1e-8).
	WeightDecay       float64
	Beta1, Beta2, Eps float64
	// ClipNorm clips the global gradient norm before each step (default 1;
	// 0 turns clipping off).
	ClipNorm float64
	// Minibatches splits each batch into this many optimiser steps (verl's
	// ppo_mini_batch_size as a count); Epochs passes over each batch
	// (ppo_epochs). Defaults 1 and 1.
	Minibatches, Epochs int
	// MaxStaleness drops records whose policy_version is older than the
	// learner's version minus MaxStaleness (counted, never trained on).
	// Default 1; negative means no bound.
	MaxStaleness int64
	// Seed orders minibatches; the same seed, weights and records give the
	// same update.
	Seed uint64
	// MicroBatchTokens bounds the tokens of one forward/backward pass
	// (gradients accumulate across passes of one minibatch). Default 4096.
	MicroBatchTokens int
	// Temperature is used for records that carry none (schema v1); nil
	// makes such a record an error.
	Temperature *float64
	// SkipNonFinite skips an update whose loss, gradient norm or weights are
	// not finite (restoring the weights and optimiser, counting it in
	// Metrics.SkippedNonFinite) instead of failing with a NonFiniteError.
	SkipNonFinite bool
}

// DefaultOptions returns the defaults documented on Options: Spec's
// declared defaults, and AdamW's betas 0.9/0.999 and eps 1e-8.
func DefaultOptions() Options {
	o, err := Spec{}.Options()
	if err != nil {
		panic("learner: the declared defaults do not validate: " + err.Error()) // TestDefaultOptions
	}
	return o
}

// Validate reports an option the learner cannot use, naming it by its YAML
// key (Spec).
func (o Options) Validate() error {
	return o.validate(func(key string) string { return key })
}

// validate is Validate with the settings named by name(key), key being the
// setting's YAML key (Spec.Options names them as the user gave them).
func (o Options) validate(name func(key string) string) error {
	if err := o.Loss.validate(name); err != nil {
		return err
	}
	switch {
	case !(o.LR > 0) || math.IsInf(o.LR, 0):
		return fmt.Errorf("%s %g: want a finite value > 0", name("lr"), o.LR)
	case o.WarmupSteps < 0:
		return fmt.Errorf("%s %d: want ≥ 0", name("warmup"), o.WarmupSteps)
	case o.WeightDecay < 0 || math.IsNaN(o.WeightDecay):
		return fmt.Errorf("%s %g: want ≥ 0", name("weight_decay"), o.WeightDecay)
	case !(o.Beta1 >= 0 && o.Beta1 < 1) || !(o.Beta2 >= 0 && o.Beta2 < 1) || !(o.Eps > 0):
		return fmt.Errorf("adam betas %g/%g, eps %g: want betas in [0, 1) and eps > 0", o.Beta1, o.Beta2, o.Eps)
	case o.ClipNorm < 0 || math.IsNaN(o.ClipNorm):
		return fmt.Errorf("%s %g: want ≥ 0 (0: off)", name("clip_grad"), o.ClipNorm)
	case o.Minibatches < 1:
		return fmt.Errorf("%s %d: want ≥ 1", name("minibatches"), o.Minibatches)
	case o.Epochs < 1:
		return fmt.Errorf("%s %d: want ≥ 1", name("epochs"), o.Epochs)
	case o.MicroBatchTokens < 1:
		return fmt.Errorf("%s %d: want ≥ 1", name("micro_batch_tokens"), o.MicroBatchTokens)
	case o.Temperature != nil && (!(*o.Temperature > 0) || math.IsInf(*o.Temperature, 0)):
		return fmt.Errorf("temperature %g: want a finite value > 0", *o.Temperature)
	}
	return nil
}

// Learner holds the policy being trained, its optimiser state and its
// version. Not safe for concurrent use.
type Learner struct {
	model train.Net
	ref   train.Net
	opts  Options
	adam  train.AdamW
	// step counts optimiser steps; updates counts Update calls that trained.
	step      int
	updates   int64
	batches   int64 // Update calls, trained or not: the metrics' update number
	version   int64
	iteration int
}

// New returns a learner training model, whose weights are policy version
// version; the model's precision (train.Float32 or train.Float64) is the
// precision of the forward, backward, logprobs, gradient and AdamW. ref,
// when non-nil, is the reference policy of the KL term for records without
// ref_log_prob; it must have model's vocabulary.
func New(model train.Net, ref train.Net, version int64, opts Options) (*Learner, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("learner: %w", err)
	}
	if model == nil || isNilNet(model) {
		return nil, fmt.Errorf("learner: no model")
	}
	if err := train.GEMMError(); err != nil {
		return nil, fmt.Errorf("learner: the GEMM: %w", err)
	}
	if isNilNet(ref) {
		ref = nil
	}
	if ref != nil && ref.Arch().Vocab != model.Arch().Vocab {
		return nil, fmt.Errorf("learner: reference vocabulary %d ≠ policy vocabulary %d", ref.Arch().Vocab, model.Arch().Vocab)
	}
	return &Learner{
		model: model, ref: ref, opts: opts, version: version,
		adam: train.AdamW{Beta1: opts.Beta1, Beta2: opts.Beta2, Eps: opts.Eps, WeightDecay: opts.WeightDecay},
	}, nil
}

// isNilNet reports a nil Net, or a nil model pointer in one (a caller's
// unset *train.Model).
func isNilNet(n train.Net) bool {
	switch m := n.(type) {
	case nil:
		return true
	case *train.Model:
		return m == nil
	case *train.Model64:
		return m == nil
	}
	return false
}

// Model is the policy being trained (its weights change with every Update):
// a *train.Model or a *train.Model64.
func (l *Learner) Model() train.Net { return l.model }

// Version is the policy version of the current weights.
func (l *Learner) Version() int64 { return l.version }

// SetIteration records the training loop's iteration; the next published
// version's State carries it, and Resume restores it.
func (l *Learner) SetIteration(k int) { l.iteration = k }

// Iteration is the training loop's iteration last set or resumed.
func (l *Learner) Iteration() int { return l.iteration }

// Steps is the number of optimiser steps taken (it sets AdamW's bias
// correction and the warmup).
func (l *Learner) Steps() int { return l.step }

// Mismatch compares the learner's logprobs before an update with the
// behaviour logprobs recorded by the actor (verl's rollout/trainer
// probability diff).
type Mismatch struct {
	MaxAbs  float64 `json:"max_abs"`
	MeanAbs float64 `json:"mean_abs"`
	// K3 is the mean k3 estimate of KL(behaviour ‖ learner) over the
	// trained tokens.
	K3 float64 `json:"k3"`
}

// Metrics describe one update; JSON names follow verl's where it has one.
type Metrics struct {
	Update        int64 `json:"update"`
	PolicyVersion int64 `json:"policy_version"`
	Steps         int   `json:"optimizer_steps"`
	Epochs        int   `json:"epochs"`
	Records       int   `json:"records"`
	// Dropped counts records over the staleness bound (or from a version
	// ahead of the learner's); Staleness counts kept and dropped records by
	// learner version − record version.
	Dropped       int            `json:"dropped_stale"`
	Staleness     map[string]int `json:"staleness"`
	Tokens        int            `json:"tokens"`
	TokensTrained int            `json:"tokens_trained"`
	Loss          float64        `json:"loss"`
	PGLoss        float64        `json:"pg_loss"`
	KL            float64        `json:"kl"`
	ClipFracHigh  float64        `json:"clip_frac_high"`
	ClipFracLow   float64        `json:"clip_frac_low"`
	DualClipFrac  float64        `json:"clip_frac_dual"`
	RatioMean     float64        `json:"ratio_mean"`
	RatioMax      float64        `json:"ratio_max"`
	Entropy       float64        `json:"entropy"`
	AdvAbsMean    float64        `json:"adv_abs_mean"`
	GradNorm      float64        `json:"grad_norm"`
	LR            float64        `json:"lr"`
	Mismatch      Mismatch       `json:"rollout_mismatch"`
	Seconds       float64        `json:"seconds"`
	TokensPerS    float64        `json:"tokens_per_s"`
	// SkippedNonFinite is 1 for an update skipped because it diverged
	// (Options.SkipNonFinite): nothing trained, the weights as before.
	SkippedNonFinite int `json:"skipped_non_finite,omitempty"`
}

// sample is one record made ready to train.
type sample struct {
	rec  *traj.AdvantageRecord
	seq  train.Sequence
	temp float64
	// tokens counts the trained (mask 1) tokens.
	tokens int
}

// RecordError is a record the learner cannot train on, with the reason.
type RecordError struct {
	TrajectoryID string
	Reason       string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("advantage record %s: %s", e.TrajectoryID, e.Reason)
}

// prepare checks one record against the model and builds its sequence.
func (l *Learner) prepare(r *traj.AdvantageRecord) (sample, error) {
	bad := func(format string, args ...any) (sample, error) {
		return sample{}, &RecordError{TrajectoryID: r.TrajectoryID, Reason: fmt.Sprintf(format, args...)}
	}
	if err := r.Validate(); err != nil {
		return bad("%v", err)
	}
	c := l.model.Arch()
	if len(r.InputIDs) > c.MaxPos {
		return bad("%d tokens do not fit the model's context of %d", len(r.InputIDs), c.MaxPos)
	}
	for i, tok := range r.InputIDs {
		if tok < 0 || int(tok) >= c.Vocab {
			return bad("token %d is id %d, outside the model's vocabulary of %d", i, tok, c.Vocab)
		}
	}
	resp := len(r.InputIDs) - r.PromptLen
	if len(r.LossMask) != resp || len(r.OldLogprobs) != resp || len(r.Advantages) != resp {
		return bad("response of %d tokens but %d mask, %d rollout_log_probs, %d advantages", resp, len(r.LossMask), len(r.OldLogprobs), len(r.Advantages))
	}
	if len(r.RefLogprobs) > 0 && len(r.RefLogprobs) != resp {
		return bad("response of %d tokens but %d ref_log_prob", resp, len(r.RefLogprobs))
	}
	var temp float64
	switch {
	case r.Temperature != nil:
		temp = *r.Temperature
	case l.opts.Temperature != nil:
		temp = *l.opts.Temperature
	default:
		return bad("no temperature (a %s record); give the sampling temperature with --temperature", r.Schema)
	}
	if temp == 0 {
		return bad("temperature 0: greedy samples have no behaviour probabilities a ratio can use")
	}
	if !(temp > 0) || math.IsInf(temp, 0) {
		return bad("temperature %g: want a finite value > 0", temp)
	}
	mask := make([]uint8, len(r.InputIDs))
	n := 0
	for i, m := range r.LossMask {
		if m != 0 {
			if r.PromptLen+i == 0 {
				return bad("loss mask 1 on the first token, which no position predicts (prompt_len 0)")
			}
			mask[r.PromptLen+i] = 1
			n++
		}
	}
	return sample{rec: r, seq: train.Sequence{Tokens: r.InputIDs, LossMask: mask}, temp: temp, tokens: n}, nil
}

// Update trains on one batch of records: it drops records past the
// staleness bound, then takes Epochs × Minibatches optimiser steps. It does
// not change the version (publishing does). A record the learner cannot use
// is an error (a *RecordError) before any weight changes. A batch with no
// trainable token returns metrics and changes nothing.
func (l *Learner) Update(ctx context.Context, records []traj.AdvantageRecord) (Metrics, error) {
	start := time.Now()
	l.batches++
	met := Metrics{Update: l.batches, PolicyVersion: l.version, Epochs: l.opts.Epochs, Records: len(records), Staleness: map[string]int{}}
	var samples []sample
	for i := range records {
		r := &records[i]
		lag := l.version - r.PolicyVersion
		met.Staleness[strconv.FormatInt(lag, 10)]++
		if lag < 0 || (l.opts.MaxStaleness >= 0 && lag > l.opts.MaxStaleness) {
			met.Dropped++
			continue
		}
		s, err := l.prepare(r)
		if err != nil {
			return met, err
		}
		samples = append(samples, s)
		met.Tokens += len(s.seq.Tokens)
		met.TokensTrained += s.tokens
	}
	if met.TokensTrained == 0 {
		met.Seconds = time.Since(start).Seconds()
		return met, nil
	}
	// Before any step: the learner's logprobs of every trained token, for the
	// mismatch metric and, with TIS, as the ratio's base. With one step per
	// batch and no TIS the training forward is that pass, so it is skipped.
	prepass := l.opts.Loss.TISCap > 0 || l.opts.Minibatches > 1 || l.opts.Epochs > 1
	var old [][]float64
	if prepass {
		var err error
		if old, err = l.score(ctx, l.model, samples); err != nil {
			return met, err
		}
		met.Mismatch = mismatch(samples, old)
	}
	refs, err := l.references(ctx, samples)
	if err != nil {
		return met, err
	}
	var tokSum struct{ entropy, kl, klTokens, ratio, adv, high, low, dual, grad float64 }
	var mismatchSeen bool
	snap := l.takeSnapshot() // nil unless SkipNonFinite
	for epoch := range l.opts.Epochs {
		order := rand.New(rand.NewPCG(l.opts.Seed, uint64(l.updates)<<16|uint64(epoch))).Perm(len(samples))
		for mb := range l.opts.Minibatches {
			idx := order[mb*len(order)/l.opts.Minibatches : (mb+1)*len(order)/l.opts.Minibatches]
			if len(idx) == 0 {
				continue
			}
			if err := ctx.Err(); err != nil {
				return met, err
			}
			st, ent, cur, err := l.minibatch(ctx, samples, idx, old, refs)
			if err != nil {
				return met, err
			}
			if !prepass && !mismatchSeen {
				// one minibatch, one epoch: cur are the pre-update logprobs
				met.Mismatch = mismatch(pick(samples, idx), cur)
				mismatchSeen = true
			}
			norm := l.model.ClipGrad(l.opts.ClipNorm)
			if err := l.checkStep(st.Loss, norm); err != nil {
				return l.refuse(met, snap, err)
			}
			l.step++
			lr := l.lr()
			l.model.AdamW(l.adam, lr, l.step)
			if err := l.checkWeights(); err != nil {
				return l.refuse(met, snap, err)
			}
			met.Steps++
			met.LR = lr
			w := float64(st.Tokens)
			met.Loss += st.Loss
			met.PGLoss += st.PGLoss
			tokSum.entropy += ent
			tokSum.kl += st.KL * float64(st.KLTokens)
			tokSum.klTokens += float64(st.KLTokens)
			tokSum.ratio += st.RatioMean * w
			tokSum.adv += st.AdvAbsMean * w
			tokSum.high += st.ClipFracHigh * w
			tokSum.low += st.ClipFracLow * w
			tokSum.dual += st.DualClipFrac * w
			tokSum.grad += norm
			met.RatioMax = max(met.RatioMax, st.RatioMax)
		}
	}
	l.updates++
	n := float64(met.TokensTrained * l.opts.Epochs)
	steps := float64(met.Steps)
	met.Loss /= steps
	met.PGLoss /= steps
	met.GradNorm = tokSum.grad / steps
	met.Entropy, met.RatioMean = tokSum.entropy/n, tokSum.ratio/n
	if tokSum.klTokens > 0 {
		met.KL = tokSum.kl / tokSum.klTokens
	}
	met.AdvAbsMean, met.ClipFracHigh, met.ClipFracLow, met.DualClipFrac = tokSum.adv/n, tokSum.high/n, tokSum.low/n, tokSum.dual/n
	met.Seconds = time.Since(start).Seconds()
	met.TokensPerS = float64(met.Tokens*l.opts.Epochs) / met.Seconds
	return met, nil
}

func (l *Learner) lr() float64 {
	if l.opts.WarmupSteps > 0 && l.step <= l.opts.WarmupSteps {
		return l.opts.LR * float64(l.step) / float64(l.opts.WarmupSteps)
	}
	return l.opts.LR
}

func pick(samples []sample, idx []int) []sample {
	out := make([]sample, len(idx))
	for i, j := range idx {
		out[i] = samples[j]
	}
	return out
}

// microBatches splits idx into runs of at most MicroBatchTokens tokens (a
// longer sequence runs alone).
func (l *Learner) microBatches(samples []sample, idx []int) [][]int {
	var out [][]int
	var cur []int
	tokens := 0
	for _, i := range idx {
		n := len(samples[i].seq.Tokens)
		if len(cur) > 0 && tokens+n > l.opts.MicroBatchTokens {
			out = append(out, cur)
			cur, tokens = nil, 0
		}
		cur = append(cur, i)
		tokens += n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// score returns m's logprob of every trained token of every sample (per
// sample, in response order), without touching gradients.
func (l *Learner) score(ctx context.Context, m train.Net, samples []sample) ([][]float64, error) {
	out := make([][]float64, len(samples))
	all := make([]int, len(samples))
	for i := range all {
		all[i] = i
	}
	for _, mb := range l.microBatches(samples, all) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		seqs, temps := sequences(samples, mb)
		lp, err := m.ForwardLogprobs(seqs, temps)
		if err != nil {
			return nil, fmt.Errorf("learner: score: %w", err)
		}
		for r, s := range lp.Seq {
			out[mb[s]] = append(out[mb[s]], lp.Logprobs[r])
		}
		lp.Release() // no backward: the model's next pass reuses its buffers
	}
	return out, nil
}

// references returns each sample's reference logprobs of its trained
// tokens: the record's ref_log_prob when it has them, else the reference
// model's. Without a reference model, a sample without ref_log_prob gets nil
// (no KL term; the KL metric covers the others), or, when KLBeta > 0 needs
// one, an error.
func (l *Learner) references(ctx context.Context, samples []sample) ([][]float64, error) {
	out := make([][]float64, len(samples))
	var missing []int
	for i, s := range samples {
		if len(s.rec.RefLogprobs) == 0 {
			missing = append(missing, i)
			continue
		}
		for j, m := range s.rec.LossMask {
			if m != 0 {
				out[i] = append(out[i], float64(s.rec.RefLogprobs[j]))
			}
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	if l.ref == nil {
		if l.opts.Loss.KLBeta > 0 {
			return nil, &RecordError{TrajectoryID: samples[missing[0]].rec.TrajectoryID,
				Reason: "no ref_log_prob and the learner has no reference model, but kl-beta > 0 needs one"}
		}
		if len(missing) == len(samples) {
			return nil, nil
		}
		return out, nil
	}
	scored, err := l.score(ctx, l.ref, pick(samples, missing))
	if err != nil {
		return nil, err
	}
	for k, i := range missing {
		out[i] = scored[k]
	}
	return out, nil
}

func sequences(samples []sample, idx []int) ([]train.Sequence, []float64) {
	seqs := make([]train.Sequence, len(idx))
	temps := make([]float64, len(idx))
	for k, i := range idx {
		seqs[k], temps[k] = samples[i].seq, samples[i].temp
	}
	return seqs, temps
}

// minibatch accumulates one minibatch's gradient (Param.G) over its
// micro-batches and returns the loss statistics, the summed entropy of its
// trained tokens, and its current logprobs (per sample of idx).
func (l *Learner) minibatch(ctx context.Context, samples []sample, idx []int, old, refs [][]float64) (LossStats, float64, [][]float64, error) {
	// The aggregation's weights are over the whole minibatch.
	var seqOf []int
	for k, i := range idx {
		for range samples[i].tokens {
			seqOf = append(seqOf, k)
		}
	}
	weights := l.opts.Loss.Weights(seqOf, len(idx))
	pos := map[int]int{} // sample index -> position in idx
	offset := make([]int, len(idx))
	o := 0
	for k, i := range idx {
		pos[i] = k
		offset[k] = o
		o += samples[i].tokens
	}
	cur := make([][]float64, len(idx))
	var total LossStats
	var entropy float64
	l.model.ZeroGrad()
	for _, mb := range l.microBatches(samples, idx) {
		if err := ctx.Err(); err != nil {
			return total, 0, nil, err
		}
		seqs, temps := sequences(samples, mb)
		lp, err := l.model.ForwardLogprobs(seqs, temps)
		if err != nil {
			return total, 0, nil, fmt.Errorf("learner: forward: %w", err)
		}
		tok := Tokens{NumSeqs: len(idx)}
		var w []float64
		next := make([]int, len(mb)) // trained-token counter per sequence of mb
		useRef := refs != nil
		if useRef {
			tok.RefLogp = []float64{}
		}
		tis := old != nil && l.opts.Loss.TISCap > 0
		if tis {
			tok.TISWeight = []float64{}
		}
		for r, s := range lp.Seq {
			i := mb[s]
			k := pos[i]
			j := next[s]
			next[s]++
			rec := samples[i].rec
			ri := lp.Pos[r] - rec.PromptLen
			behaviour := float64(rec.OldLogprobs[ri])
			base := behaviour
			if tis {
				base = old[i][j]
				tok.TISWeight = append(tok.TISWeight, min(math.Exp(max(-advantage.LogRatioClamp, min(advantage.LogRatioClamp, old[i][j]-behaviour))), l.opts.Loss.TISCap))
			}
			tok.Seq = append(tok.Seq, k)
			tok.Logp = append(tok.Logp, lp.Logprobs[r])
			tok.Base = append(tok.Base, base)
			tok.Advantage = append(tok.Advantage, float64(rec.Advantages[ri]))
			if useRef {
				ref := math.NaN()
				if refs[i] != nil {
					ref = refs[i][j]
				}
				tok.RefLogp = append(tok.RefLogp, ref)
			}
			w = append(w, weights[offset[k]+j])
			cur[k] = append(cur[k], lp.Logprobs[r])
			entropy += lp.Entropy[r]
		}
		st, grad := l.opts.Loss.Compute(tok, w)
		if err := l.model.BackwardLogprobs(lp, grad); err != nil {
			return total, 0, nil, fmt.Errorf("learner: backward: %w", err)
		}
		accumulate(&total, st)
	}
	if total.Tokens > 0 {
		n := float64(total.Tokens)
		if total.KLTokens > 0 {
			total.KL /= float64(total.KLTokens)
		}
		total.RatioMean /= n
		total.AdvAbsMean /= n
		total.ClipFracHigh /= n
		total.ClipFracLow /= n
		total.DualClipFrac /= n
	}
	return total, entropy, cur, nil
}

// accumulate adds one micro-batch's stats: Loss and PGLoss are already
// weighted sums; the token means are turned back into sums (divided again
// by the caller).
func accumulate(total *LossStats, st LossStats) {
	n := float64(st.Tokens)
	total.Loss += st.Loss
	total.PGLoss += st.PGLoss
	total.KL += st.KL * float64(st.KLTokens)
	total.KLTokens += st.KLTokens
	total.RatioMean += st.RatioMean * n
	total.AdvAbsMean += st.AdvAbsMean * n
	total.ClipFracHigh += st.ClipFracHigh * n
	total.ClipFracLow += st.ClipFracLow * n
	total.DualClipFrac += st.DualClipFrac * n
	total.RatioMax = max(total.RatioMax, st.RatioMax)
	total.Tokens += st.Tokens
}

// mismatch compares learner logprobs (per sample, trained tokens in order)
// with the recorded behaviour logprobs.
func mismatch(samples []sample, learner [][]float64) Mismatch {
	var m Mismatch
	n := 0
	for i, s := range samples {
		j := 0
		for ri, mk := range s.rec.LossMask {
			if mk == 0 {
				continue
			}
			b := float64(s.rec.OldLogprobs[ri])
			d := math.Abs(learner[i][j] - b)
			m.MaxAbs = max(m.MaxAbs, d)
			m.MeanAbs += d
			m.K3 += advantage.KLTerm(advantage.KLK3, b, learner[i][j])
			j++
			n++
		}
	}
	if n > 0 {
		m.MeanAbs /= float64(n)
		m.K3 /= float64(n)
	}
	return m
}
