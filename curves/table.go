package curves

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/toolrl/toolrl/trainer"
)

// Wilson returns the 95% Wilson score interval of a proportion p observed
// over n trials (Wilson 1927; z = 1.96). n = 0 gives [0, 1].
func Wilson(p float64, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	const z = z95
	fn := float64(n)
	d := 1 + z*z/fn
	c := (p + z*z/(2*fn)) / d
	h := z * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn)) / d
	return max(0, c-h), min(1, c+h)
}

// WriteTable writes a markdown table of each run's held-out evaluation: the
// first (the starting policy) and the last evaluated version, overall and
// by each split field's values, accuracy and call rate with 95% intervals
// over the evaluation's prompts (ClusterRobust), or, for an eval.jsonl line
// without counts per prompt, Wilson's over its samples (which treats the G
// correlated samples of a prompt as independent and is narrower); the last
// column names the method of the row. Runs without evaluations are listed
// without figures.
func WriteTable(w io.Writer, runs []Run) error {
	var b strings.Builder
	b.WriteString("| run | version (iteration) | split | samples | accuracy | call rate | calls / trajectory | invalid calls | timeouts | 95% interval |\n")
	b.WriteString("|---|---|---|---:|---|---|---:|---:|---:|---|\n")
	row := func(run, version, split string, s trainer.RolloutStats) {
		acc := Accuracy(s)
		method := string(acc.Method)
		if acc.Method == OverPrompts {
			method = fmt.Sprintf("over %d prompts (CR1)", len(s.PerPrompt.Samples))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %.2f | %.1f%% | %.1f%% | %s |\n", run, version, split, s.Trajectories,
			acc, CallRate(s), s.CallsPerTrajectory, 100*s.InvalidCallRate, 100*s.TimeoutRate, method)
	}
	for _, r := range runs {
		if len(r.Evals) == 0 {
			fmt.Fprintf(&b, "| %s | (no evaluation) | | | | | | | | |\n", r.Label)
			continue
		}
		evals := []trainer.EvalMetrics{r.Evals[0]}
		if last := r.Evals[len(r.Evals)-1]; len(r.Evals) > 1 {
			evals = append(evals, last)
		}
		for _, e := range evals {
			version := fmt.Sprintf("v%d (%d)", e.PolicyVersion, e.Iteration)
			row(r.Label, version, "all", e.Overall)
			for _, field := range splitFieldsOf(e) {
				for _, value := range sortedKeys(e.Split[field]) {
					row(r.Label, version, field+"="+value, e.Split[field][value])
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func splitFieldsOf(e trainer.EvalMetrics) []string { return sortedKeys(e.Split) }

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
