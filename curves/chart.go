package curves

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"

	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/trainer"
)

// axis is how a chart's y axis is fitted to its data.
type axis int

const (
	// fitted spans the data (gonum's default), for signed quantities
	// such as a loss.
	fitted axis = iota
	// fromZero starts at 0 and spans the data: a quantity that is never
	// negative (KL, entropy, gradient norm, lengths, counts).
	fromZero
	// share is a rate stored 0–1 and drawn as a percentage: the axis spans
	// the data (and its bands), padded, within 0–100 %, so that a curve
	// between 90 and 100 % is not squashed against the top.
	share
	// logarithmic spans decades (rollout/learner mismatch); points ≤ 0
	// cannot be drawn on it and are left out (the legend says how many).
	logarithmic
)

// quantity is one standard chart: a figure of every run against the
// iteration, in one or two kinds (rollout and eval; low+high and dual).
type quantity struct {
	file, title, yLabel string
	axis                axis
	kinds               []kind
}

// kind is one series per run of a quantity. The first kind of a chart is
// drawn as solid lines, the second dashed with markers; every series of a
// chart has its own colour.
type kind struct {
	name   string
	points func(Run) plotter.XYs
	// band, when set, gives each point's 95% interval (of a share: over
	// the evaluation's prompts, or Wilson's over its trajectories where
	// eval.jsonl has no counts per prompt), drawn as a shaded band.
	band func(Run) []interval
}

// interval is one point's confidence interval, in the point's units, and
// how it was computed.
type interval struct {
	lo, hi float64
	method Method
}

// intervalOf is a share's interval.
func intervalOf(s Share) interval { return interval{lo: s.Lo, hi: s.Hi, method: s.Method} }

// bandNote says in a legend how a band's intervals were computed.
func bandNote(band []interval) string {
	prompts, samples := 0, 0
	for _, b := range band {
		if b.method == OverPrompts {
			prompts++
		} else {
			samples++
		}
	}
	switch {
	case samples == 0:
		return "95% band over prompts"
	case prompts == 0:
		return "95% Wilson band over samples"
	}
	return fmt.Sprintf("95%% band over prompts, Wilson over samples at %d of %d points", samples, len(band))
}

// quantities are the standard charts, in the order they are written.
var quantities = []quantity{
	{file: "reward.png", title: "Reward", yLabel: "reward (mean total per trajectory)",
		kinds: []kind{{name: "rollout", points: rollout(func(s trainer.RolloutStats) float64 { return s.RewardMean })},
			{name: "eval", points: eval(func(s trainer.RolloutStats) float64 { return s.RewardMean })}}},
	{file: "accuracy.png", title: "Accuracy", yLabel: "accuracy (% of trajectories right)", axis: share,
		kinds: []kind{{name: "rollout", points: rollout(func(s trainer.RolloutStats) float64 { return s.Accuracy })},
			{name: "eval", points: eval(func(s trainer.RolloutStats) float64 { return s.Accuracy }),
				band: evalBand(Accuracy)}}},
	{file: "call_rate.png", title: "Tool call rate", yLabel: "call rate (% of trajectories with a tool call)", axis: share,
		kinds: []kind{{name: "rollout", points: rollout(func(s trainer.RolloutStats) float64 { return s.CallRate })},
			{name: "eval", points: eval(func(s trainer.RolloutStats) float64 { return s.CallRate }),
				band: evalBand(CallRate)}}},
	{file: "calls_per_trajectory.png", title: "Tool calls per trajectory", yLabel: "tool calls (mean per trajectory)", axis: fromZero,
		kinds: []kind{{name: "rollout", points: rollout(func(s trainer.RolloutStats) float64 { return s.CallsPerTrajectory })},
			{name: "eval", points: eval(func(s trainer.RolloutStats) float64 { return s.CallsPerTrajectory })}}},
	{file: "response_length.png", title: "Response length", yLabel: "response tokens (mean per trajectory)", axis: fromZero,
		kinds: []kind{{name: "rollout", points: rollout(func(s trainer.RolloutStats) float64 { return s.ResponseTokens })},
			{name: "eval", points: eval(func(s trainer.RolloutStats) float64 { return s.ResponseTokens })}}},
	{file: "loss.png", title: "Learner loss", yLabel: "loss (per update, as optimised)",
		kinds: []kind{{name: "loss", points: update(func(m learner.Metrics) float64 { return m.Loss })},
			{name: "policy-gradient part", points: update(func(m learner.Metrics) float64 { return m.PGLoss })}}},
	{file: "grad_norm.png", title: "Gradient norm", yLabel: "gradient L2 norm (before clipping)", axis: fromZero,
		kinds: []kind{{name: "learner", points: update(func(m learner.Metrics) float64 { return m.GradNorm })}}},
	{file: "kl.png", title: "KL to the reference policy (k3; 0 for a run without a reference)", yLabel: "KL (nats, mean per trained token)", axis: fromZero,
		kinds: []kind{{name: "learner", points: update(func(m learner.Metrics) float64 { return m.KL })}}},
	{file: "rollout_mismatch.png", title: "Rollout/learner logprob mismatch (log scale)", yLabel: "|Δ logprob| (nats per token)", axis: logarithmic,
		kinds: []kind{{name: "mean |Δ|", points: update(func(m learner.Metrics) float64 { return m.Mismatch.MeanAbs })},
			{name: "max |Δ|", points: update(func(m learner.Metrics) float64 { return m.Mismatch.MaxAbs })}}},
	{file: "clip_fraction.png", title: "PPO clip fraction", yLabel: "clipped (% of trained tokens)", axis: share,
		kinds: []kind{{name: "low+high", points: update(func(m learner.Metrics) float64 { return m.ClipFracLow + m.ClipFracHigh })},
			{name: "dual", points: update(func(m learner.Metrics) float64 { return m.DualClipFrac })}}},
	{file: "entropy.png", title: "Policy entropy", yLabel: "entropy (nats, mean per trained token)", axis: fromZero,
		kinds: []kind{{name: "learner", points: update(func(m learner.Metrics) float64 { return m.Entropy })}}},
}

// evalBand gives each evaluation's 95% interval of the share f (Accuracy,
// CallRate), point for point with eval.
func evalBand(f func(trainer.RolloutStats) Share) func(Run) []interval {
	return func(r Run) []interval {
		var out []interval
		for _, e := range r.Evals {
			if e.Overall.Trajectories > 0 {
				out = append(out, intervalOf(f(e.Overall)))
			}
		}
		return out
	}
}

// rollout picks a figure of each iteration's rollout (iterations that
// sampled nothing have none).
func rollout(f func(trainer.RolloutStats) float64) func(Run) plotter.XYs {
	return func(r Run) plotter.XYs {
		var xy plotter.XYs
		for _, m := range r.Iterations {
			if m.Rollout.Trajectories > 0 {
				xy = append(xy, plotter.XY{X: float64(m.Iteration), Y: f(m.Rollout)})
			}
		}
		return xy
	}
}

// eval picks a figure of each evaluation, at the iteration after which it
// ran (0: before the first update).
func eval(f func(trainer.RolloutStats) float64) func(Run) plotter.XYs {
	return func(r Run) plotter.XYs {
		var xy plotter.XYs
		for _, e := range r.Evals {
			if e.Overall.Trajectories > 0 {
				xy = append(xy, plotter.XY{X: float64(e.Iteration), Y: f(e.Overall)})
			}
		}
		return xy
	}
}

// update picks a figure of each iteration's learner update; an iteration
// whose batch was all stale took no optimizer step and has none (its
// figures are zeros, not measurements).
func update(f func(learner.Metrics) float64) func(Run) plotter.XYs {
	return func(r Run) plotter.XYs {
		var xy plotter.XYs
		for _, m := range r.Iterations {
			if m.Learner.Steps > 0 {
				xy = append(xy, plotter.XY{X: float64(m.Iteration), Y: f(m.Learner)})
			}
		}
		return xy
	}
}

// chart is one chart ready to draw.
type chart struct {
	file, title, yLabel string
	axis                axis
	series              []series
}

// series is one line of a chart: color is its palette colour, light
// draws it lightened (a run's rollout series beside its eval series in the
// full colour), kind its line style (0 thin solid; 1 thick dashed, with
// markers), run its marker shape; band, when set, has one interval per
// point.
type series struct {
	label            string
	run, color, kind int
	light            bool
	points           plotter.XYs
	band             []interval
}

// charts lays out runs' charts: the standard quantities, then eval
// accuracy split by each split field any run has.
func charts(runs []Run) []chart {
	var out []chart
	for _, q := range quantities {
		c := chart{file: q.file, title: titled(q.title, runs), yLabel: q.yLabel, axis: q.axis}
		for i, r := range runs {
			for k, kd := range q.kinds {
				label := r.Label
				switch {
				case len(q.kinds) > 1 && len(runs) > 1:
					label += " " + kd.name
				case len(q.kinds) > 1:
					label = kd.name
				}
				// A run's series share its colour when they are a
				// measurement and its evaluation (rollout light, eval
				// full); other kinds (loss and its part, mean and max)
				// each take their own colour.
				s := series{label: label, run: i, color: i, kind: k, points: kd.points(r)}
				switch {
				case len(q.kinds) > 1 && q.kinds[1].name == "eval":
					s.light = k == 0
				case len(q.kinds) > 1:
					s.color = i*len(q.kinds) + k
				}
				if kd.band != nil {
					s.band = kd.band(r)
				}
				c.series = append(c.series, s)
			}
		}
		out = append(out, c)
	}
	splits := []struct {
		name, file, yLabel string
		value              func(trainer.RolloutStats) float64
		share              func(trainer.RolloutStats) Share
	}{
		{"accuracy", "eval_accuracy_by_", "accuracy (% of trajectories right)", func(s trainer.RolloutStats) float64 { return s.Accuracy }, Accuracy},
		{"call rate", "eval_call_rate_by_", "call rate (% of trajectories with a tool call)", func(s trainer.RolloutStats) float64 { return s.CallRate }, CallRate},
	}
	for _, field := range splitFields(runs) {
		values := splitValues(runs, field)
		for _, q := range splits {
			c := chart{file: q.file + fileSafe(field) + ".png", title: titled("Eval "+q.name+" by "+field, runs),
				yLabel: q.yLabel, axis: share}
			for i, r := range runs {
				for v, value := range values {
					label := field + "=" + value
					if len(runs) > 1 {
						label = r.Label + " " + label
					}
					var xy plotter.XYs
					var band []interval
					for _, e := range r.Evals {
						if st, ok := e.Split[field][value]; ok && st.Trajectories > 0 {
							xy = append(xy, plotter.XY{X: float64(e.Iteration), Y: q.value(st)})
							band = append(band, intervalOf(q.share(st)))
						}
					}
					c.series = append(c.series, series{label: label, run: i, color: i, kind: v % 4, points: xy, band: band})
				}
			}
			out = append(out, c)
		}
	}
	return out
}

// titled names the run in a one-run chart's title (an overlay's legend
// names them).
func titled(title string, runs []Run) string {
	if len(runs) == 1 {
		return fmt.Sprintf("%s: %s", runs[0].Label, title)
	}
	return title
}

// splitFields are the split fields of all runs' evaluations, sorted.
func splitFields(runs []Run) []string {
	set := map[string]bool{}
	for _, r := range runs {
		for _, e := range r.Evals {
			for f := range e.Split {
				set[f] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// splitValues are field's values in all runs' evaluations, sorted.
func splitValues(runs []Run, field string) []string {
	set := map[string]bool{}
	for _, r := range runs {
		for _, e := range r.Evals {
			for v := range e.Split[field] {
				set[v] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// fileSafe keeps a split field's letters, digits, '-' and '_' for a file
// name and turns the rest into '_'.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}
