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

// quantity is one standard chart: a figure of every run against the
// iteration, in one or two kinds (rollout and eval; low+high and dual).
type quantity struct {
	file, title, yLabel string
	// percent draws shares (0–1 in the files) as percentages; full fixes
	// the axis to 0–100 % so that charts of different runs compare.
	percent, full bool
	kinds         []kind
}

// kind is one series per run of a quantity; the first kind of a chart is
// drawn as plain lines, the second with markers.
type kind struct {
	name   string
	points func(Run) plotter.XYs
}

// quantities are the standard charts, in the order they are written.
var quantities = []quantity{
	{file: "reward.png", title: "Reward", yLabel: "reward (mean total per trajectory)",
		kinds: []kind{{"rollout", rollout(func(s trainer.RolloutStats) float64 { return s.RewardMean })},
			{"eval", eval(func(s trainer.RolloutStats) float64 { return s.RewardMean })}}},
	{file: "accuracy.png", title: "Accuracy", yLabel: "accuracy (% of trajectories right)", percent: true, full: true,
		kinds: []kind{{"rollout", rollout(func(s trainer.RolloutStats) float64 { return s.Accuracy })},
			{"eval", eval(func(s trainer.RolloutStats) float64 { return s.Accuracy })}}},
	{file: "call_rate.png", title: "Tool call rate", yLabel: "call rate (% of trajectories with a tool call)", percent: true, full: true,
		kinds: []kind{{"rollout", rollout(func(s trainer.RolloutStats) float64 { return s.CallRate })},
			{"eval", eval(func(s trainer.RolloutStats) float64 { return s.CallRate })}}},
	{file: "calls_per_trajectory.png", title: "Tool calls per trajectory", yLabel: "tool calls (mean per trajectory)",
		kinds: []kind{{"rollout", rollout(func(s trainer.RolloutStats) float64 { return s.CallsPerTrajectory })},
			{"eval", eval(func(s trainer.RolloutStats) float64 { return s.CallsPerTrajectory })}}},
	{file: "kl.png", title: "KL to the reference policy (k3)", yLabel: "KL (nats, mean per trained token)",
		kinds: []kind{{"learner", update(func(m learner.Metrics) float64 { return m.KL })}}},
	{file: "clip_fraction.png", title: "PPO clip fraction", yLabel: "clipped (% of trained tokens)", percent: true,
		kinds: []kind{{"low+high", update(func(m learner.Metrics) float64 { return m.ClipFracLow + m.ClipFracHigh })},
			{"dual", update(func(m learner.Metrics) float64 { return m.DualClipFrac })}}},
	{file: "entropy.png", title: "Policy entropy", yLabel: "entropy (nats, mean per trained token)",
		kinds: []kind{{"learner", update(func(m learner.Metrics) float64 { return m.Entropy })}}},
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
	percent, full       bool
	series              []series
}

// series is one line of a chart. run picks its dash pattern; color its
// color; marked draws markers at its points.
type series struct {
	label      string
	run, color int
	marked     bool
	points     plotter.XYs
}

// charts lays out runs' charts: the standard quantities, then eval
// accuracy split by each split field any run has.
func charts(runs []Run) []chart {
	var out []chart
	for _, q := range quantities {
		c := chart{file: q.file, title: titled(q.title, runs), yLabel: q.yLabel, percent: q.percent, full: q.full}
		for i, r := range runs {
			for k, kd := range q.kinds {
				label := r.Label
				switch {
				case len(q.kinds) > 1 && len(runs) > 1:
					label += " " + kd.name
				case len(q.kinds) > 1:
					label = kd.name
				}
				c.series = append(c.series, series{label: label, run: i, color: i, marked: k > 0,
					points: kd.points(r)})
			}
		}
		out = append(out, c)
	}
	splits := []struct {
		name, file, yLabel string
		value              func(trainer.RolloutStats) float64
	}{
		{"accuracy", "eval_accuracy_by_", "accuracy (% of trajectories right)", func(s trainer.RolloutStats) float64 { return s.Accuracy }},
		{"call rate", "eval_call_rate_by_", "call rate (% of trajectories with a tool call)", func(s trainer.RolloutStats) float64 { return s.CallRate }},
	}
	for _, field := range splitFields(runs) {
		values := splitValues(runs, field)
		for _, q := range splits {
			c := chart{file: q.file + fileSafe(field) + ".png", title: titled("Eval "+q.name+" by "+field, runs),
				yLabel: q.yLabel, percent: true, full: true}
			for i, r := range runs {
				for v, value := range values {
					label := field + "=" + value
					if len(runs) > 1 {
						label = r.Label + " " + label
					}
					var xy plotter.XYs
					for _, e := range r.Evals {
						if st, ok := e.Split[field][value]; ok && st.Trajectories > 0 {
							xy = append(xy, plotter.XY{X: float64(e.Iteration), Y: q.value(st)})
						}
					}
					c.series = append(c.series, series{label: label, run: i, color: v, marked: true, points: xy})
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
