package curves

import (
	"fmt"
	"math"

	"github.com/toolrl/toolrl/trainer"
)

// z95 is the standard normal quantile of a two-sided 95% interval.
const z95 = 1.959963984540054

// Method names how an interval was computed, as tables and legends print it.
type Method string

const (
	// OverPrompts is the cluster-robust interval over prompts
	// (ClusterRobust): an evaluation's G samples of one prompt are one
	// cluster.
	OverPrompts Method = "over prompts (CR1)"
	// OverSamples is Wilson's interval over samples, for figures without
	// counts per prompt (eval.jsonl lines written before they were
	// recorded): it treats the G samples of a prompt as independent, so it
	// is narrower than an interval over prompts.
	OverSamples Method = "over samples (Wilson)"
)

// Share is a proportion with its 95% interval and how that was computed.
type Share struct {
	P, Lo, Hi float64
	Method    Method
}

// String formats the share as "91.3% [89.0, 93.2]" (percent, the interval's
// bounds in percent).
func (s Share) String() string {
	return fmt.Sprintf("%.1f%% [%.1f, %.1f]", 100*s.P, 100*s.Lo, 100*s.Hi)
}

// ClusterRobust returns the ratio p = Σx_j / Σn_j over C = len(x) clusters
// (prompts: x_j right answers, or samples with a call, of the n_j samples
// of prompt j) and its 95% cluster-robust interval p ± z·se, clipped at 0,
// and at 1 when every x_j ≤ n_j (a share). The variance is the
// cluster-robust sandwich of a regression on a constant, which for a ratio
// of cluster totals is the following, with the CR1 small-sample factor
// C/(C−1) (Cameron & Miller 2015, "A Practitioner's Guide to Cluster-Robust
// Inference", J. Human Resources 50(2); Stata's factor
// C/(C−1)·(N−1)/(N−K) with K = 1 differs by (N−1)/N):
//
//	Var(p) = C/(C−1) · Σ_j (x_j − p·n_j)² / (Σ_j n_j)²
//
// Samples of one prompt may be correlated; prompts are taken as
// independent. When the sandwich says nothing (fewer than 2 prompts, or
// every prompt's share equal to p, such as all right: the variance is 0)
// the interval is Wilson's over the C prompts, as if each prompt were one
// sample; no samples give p = 0 and [0, 1]. x and n must have one entry
// per cluster.
func ClusterRobust(x, n []int) (p, lo, hi float64) {
	c := len(x)
	var sx, sn float64
	for j := range x {
		sx += float64(x[j])
		sn += float64(n[j])
	}
	if sn == 0 {
		return 0, 0, 1
	}
	p = sx / sn
	var ss float64
	share := true
	for j := range x {
		share = share && x[j] <= n[j]
		d := float64(x[j]) - p*float64(n[j])
		ss += d * d
	}
	if c < 2 || ss == 0 {
		lo, hi = Wilson(p, c)
		return p, lo, hi
	}
	se := math.Sqrt(float64(c) / float64(c-1) * ss / (sn * sn))
	lo, hi = max(0, p-z95*se), p+z95*se
	if share {
		hi = min(1, hi)
	}
	return p, lo, hi
}

// Accuracy is s's accuracy with its 95% interval: over prompts when s has
// counts per prompt, else Wilson's over its trajectories.
func Accuracy(s trainer.RolloutStats) Share {
	return shareOf(s, s.Accuracy, func(pc *trainer.PromptCounts) []int { return pc.Correct })
}

// CallRate is s's share of trajectories with a tool call with its 95%
// interval, as Accuracy.
func CallRate(s trainer.RolloutStats) Share {
	return shareOf(s, s.CallRate, func(pc *trainer.PromptCounts) []int { return pc.WithCall })
}

// shareOf is the share p of s's trajectories with its interval: over
// prompts from the counts count picks from s.PerPrompt, or, without them
// (or with counts that do not match s's trajectories), Wilson's over the
// trajectories.
func shareOf(s trainer.RolloutStats, p float64, count func(*trainer.PromptCounts) []int) Share {
	if pc := s.PerPrompt; pc != nil && len(count(pc)) == len(pc.Samples) && len(pc.Samples) > 0 && sum(pc.Samples) == s.Trajectories {
		cp, lo, hi := ClusterRobust(count(pc), pc.Samples)
		return Share{P: cp, Lo: lo, Hi: hi, Method: OverPrompts}
	}
	lo, hi := Wilson(p, s.Trajectories)
	return Share{P: p, Lo: lo, Hi: hi, Method: OverSamples}
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}
