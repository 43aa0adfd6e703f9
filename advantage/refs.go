package advantage

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/toolrl/toolrl/traj"
)

// RefScorer returns reference-policy logprobs, one per response token
// (positions promptLens[i]..len(seqs[i])-1), for a batch of sequences at
// one temperature: log-softmax(logits/temperature), the quantity a
// trajectory sampled at that temperature records. *actor.Policy is one. A
// scorer that also has VocabSize() and MaxPositions() gets only sequences
// within them (ScoreReferences checks first).
type RefScorer interface {
	ScoreTemperature(ctx context.Context, seqs [][]int32, promptLens []int, temperature float64) ([][]float32, error)
}

// ReferenceTemperature is the temperature t's reference logprobs are scored
// at: the one it was sampled at, 1 when it was greedy (0: its logprobs are
// log-softmax(logits)), and fallback when it records none (v1 data).
func ReferenceTemperature(t *traj.Trajectory, fallback float64) float64 {
	switch {
	case t.Temperature == nil:
		return fallback
	case *t.Temperature == 0:
		return 1
	}
	return *t.Temperature
}

// ErrRefScorer marks a failure of the reference scorer as a whole (every
// sequence of a call failed alone too, and so did a two-token probe), or of
// the context: nothing about the trajectories, so a caller retries rather
// than blaming them.
var ErrRefScorer = errors.New("reference scoring")

// ScoreReferences is toolrl's one reference-scoring loop (advantage
// --ref-model, the advantage service): it fills RefLogprobs of each
// trajectory of ts, scoring each at ReferenceTemperature(t, fallback), in
// calls of at most batch sequences of one temperature. A trajectory the
// scorer cannot take (longer than its positions, a token outside its
// vocabulary, or a sequence that fails alone while the scorer answers a
// probe) is left unscored and gets its error in failed (failed[i] for
// ts[i]; nil when scored). The error is non-nil, wrapping ErrRefScorer, when
// the scorer fails as a whole or ctx ends.
func ScoreReferences(ctx context.Context, sc RefScorer, ts []*traj.Trajectory, batch int, fallback float64) (failed []error, err error) {
	if !(fallback > 0) || math.IsInf(fallback, 0) {
		return nil, fmt.Errorf("reference scoring: fallback temperature %v, want a finite value > 0", fallback)
	}
	batch = max(batch, 1)
	failed = make([]error, len(ts))
	vocab, positions := scorerLimits(sc)
	// Calls hold one temperature each: the trajectories by temperature, in
	// their order.
	var temps []float64
	byTemp := map[float64][]int{}
	for i, t := range ts {
		if err := scorable(t, vocab, positions); err != nil {
			failed[i] = err
			continue
		}
		T := ReferenceTemperature(t, fallback)
		if _, ok := byTemp[T]; !ok {
			temps = append(temps, T)
		}
		byTemp[T] = append(byTemp[T], i)
	}
	for _, T := range temps {
		idx := byTemp[T]
		for start := 0; start < len(idx); start += batch {
			if err := scoreCall(ctx, sc, ts, idx[start:min(start+batch, len(idx))], T, failed); err != nil {
				return failed, err
			}
		}
	}
	return failed, nil
}

// scoreCall scores ts[idx] at temperature T in one call; when the call
// fails it scores each alone, to find the ones at fault.
func scoreCall(ctx context.Context, sc RefScorer, ts []*traj.Trajectory, idx []int, T float64, failed []error) error {
	seqs := make([][]int32, len(idx))
	lens := make([]int, len(idx))
	for k, i := range idx {
		seqs[k], lens[k] = ts[i].Tokens, ts[i].PromptLen
	}
	out, err := sc.ScoreTemperature(ctx, seqs, lens, T)
	if err == nil && len(out) != len(idx) {
		err = fmt.Errorf("%d results for %d sequences", len(out), len(idx))
	}
	if err == nil {
		for k, i := range idx {
			failed[i] = setReferences(ts[i], out[k])
		}
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w of %d sequences: %w", ErrRefScorer, len(idx), err)
	}
	var errs []error
	if len(idx) == 1 {
		errs = []error{err}
	} else {
		for _, i := range idx {
			one, err := sc.ScoreTemperature(ctx, [][]int32{ts[i].Tokens}, []int{ts[i].PromptLen}, T)
			if err == nil && len(one) != 1 {
				err = fmt.Errorf("%d results for 1 sequence", len(one))
			}
			if ctx.Err() != nil {
				return fmt.Errorf("%w of trajectory %s: %w", ErrRefScorer, ts[i].ID, ctx.Err())
			}
			if err == nil {
				failed[i] = setReferences(ts[i], one[0])
				continue
			}
			errs = append(errs, err)
			failed[i] = err
		}
	}
	if len(errs) == len(idx) && !scorerHealthy(ctx, sc) {
		return fmt.Errorf("%w of %d sequences at temperature %g, each alone too, and of a probe: %w", ErrRefScorer, len(idx), T, errs[0])
	}
	if len(idx) == 1 {
		failed[idx[0]] = errs[0]
	}
	return nil
}

// setReferences stores a scorer's logprobs of t's response as its
// RefLogprobs (ReferenceLogprobs).
func setReferences(t *traj.Trajectory, scores []float32) error {
	refs, err := ReferenceLogprobs(t, scores)
	if err != nil {
		return err
	}
	t.RefLogprobs = refs
	return nil
}

// scorerHealthy tells a scorer that fails (down, out of memory) from input
// it cannot score: when every sequence of a call failed alone, the scorer
// is asked for a two-token probe that any model can score.
func scorerHealthy(ctx context.Context, sc RefScorer) bool {
	out, err := sc.ScoreTemperature(ctx, [][]int32{{0, 0}}, []int{1}, 1)
	return err == nil && len(out) == 1
}

// scorerLimits returns the vocabulary size and position count of a scorer
// that reports them (actor.Policy does), else 0.
func scorerLimits(sc RefScorer) (vocab, positions int) {
	if v, ok := sc.(interface{ VocabSize() int }); ok {
		vocab = v.VocabSize()
	}
	if p, ok := sc.(interface{ MaxPositions() int }); ok {
		positions = p.MaxPositions()
	}
	return vocab, positions
}

// scorable checks t against the reference model's limits (0: unknown).
func scorable(t *traj.Trajectory, vocab, positions int) error {
	if positions > 0 && len(t.Tokens) > positions {
		return fmt.Errorf("%d tokens, more than the reference model's %d positions", len(t.Tokens), positions)
	}
	if vocab > 0 {
		for j, id := range t.Tokens {
			if id < 0 || int(id) >= vocab {
				return fmt.Errorf("token %d at position %d is outside the reference model's vocabulary [0, %d)", id, j, vocab)
			}
		}
	}
	return nil
}

// ReferenceLogprobs turns a RefScorer's logprobs of t's response tokens into
// t's ref_log_prob: injected tokens (loss mask 0) get 0, as traj requires,
// and rounding must not make a logprob positive.
func ReferenceLogprobs(t *traj.Trajectory, scores []float32) ([]float32, error) {
	if len(scores) != len(t.LossMask) {
		return nil, fmt.Errorf("reference scoring of %s: %d logprobs for %d response tokens", t.ID, len(scores), len(t.LossMask))
	}
	refs := make([]float32, len(scores))
	for j, m := range t.LossMask {
		if m == 1 {
			refs[j] = min(0, scores[j])
		}
	}
	return refs, nil
}
