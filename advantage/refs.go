package advantage

import (
	"context"
	"fmt"

	"github.com/toolrl/toolrl/traj"
)

// RefScorer returns reference-policy logprobs, one per response token
// (positions promptLens[i]..len(seqs[i])-1), for a batch of sequences, at
// the temperature the trajectories were sampled at (their logprobs are
// log-softmax(logits/T)). actor.Policy's Score method is one for T = 1.
type RefScorer interface {
	Score(ctx context.Context, seqs [][]int32, promptLens []int) ([][]float32, error)
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
