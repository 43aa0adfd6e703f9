package calceval

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"text/tabwriter"

	"github.com/toolrl/toolrl/curves"
	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/trainer"
	"github.com/toolrl/toolrl/traj"
)

// evalColumn is one column of the eval table: all prompts, or the prompts
// with one value of a split field.
type evalColumn struct {
	name  string
	stats trainer.RolloutStats
	// groups and unequal count the column's groups and those whose samples
	// are not all right or all wrong.
	groups, unequal int
}

// WriteTable prints ev as a table with one column for all prompts and
// one per value of each split field. The figures are ev's, accuracy and
// call rate with their 95% intervals over prompts (curves.Accuracy,
// curves.CallRate, from ev's counts per prompt); the one figure EvalMetrics
// lacks, groups with unequal correctness, is counted from the groups with
// the job's own answer check (job.Rewards.Score, as the orchestrator's
// accounting does; the job must be normalized).
func WriteTable(w io.Writer, job *orchestrator.Job, ev trainer.EvalMetrics, groups []traj.Group, splitBy []string) error {
	cols := []*evalColumn{{name: "all", stats: ev.Overall}}
	byName := map[string]*evalColumn{"all": cols[0]}
	for _, field := range splitBy {
		split := ev.Split[field]
		for _, value := range slices.Sorted(maps.Keys(split)) {
			c := &evalColumn{name: field + "=" + value, stats: split[value]}
			cols = append(cols, c)
			byName[c.name] = c
		}
	}
	for i := range groups {
		g := &groups[i]
		unequal := unequalCorrectness(job, g)
		names := []string{"all"}
		for _, field := range splitBy {
			value, err := metaValue(g, field)
			if err != nil {
				return err
			}
			names = append(names, field+"="+value)
		}
		for _, name := range names {
			c, ok := byName[name]
			if !ok {
				return fmt.Errorf("group %s falls in %s, which the evaluation has no figures for", g.GroupID, name)
			}
			c.groups++
			if unequal {
				c.unequal++
			}
		}
	}
	for _, c := range cols {
		if c.groups != c.stats.Groups {
			return fmt.Errorf("%s: %d groups sampled, %d in the evaluation's figures", c.name, c.groups, c.stats.Groups)
		}
	}
	rows := []struct {
		label string
		cell  func(c *evalColumn) string
	}{
		{"prompts", func(c *evalColumn) string { return fmt.Sprint(c.stats.Groups) }},
		{"samples", func(c *evalColumn) string { return fmt.Sprint(c.stats.Trajectories) }},
		{"accuracy", func(c *evalColumn) string { return share(c.stats.Accuracy, c.stats.Trajectories) }},
		{intervalLabel, func(c *evalColumn) string { return interval(curves.Accuracy(c.stats)) }},
		{"call rate", func(c *evalColumn) string { return share(c.stats.CallRate, c.stats.Trajectories) }},
		{intervalLabel, func(c *evalColumn) string { return interval(curves.CallRate(c.stats)) }},
		{"calls per trajectory", func(c *evalColumn) string { return fmt.Sprintf("%.2f", c.stats.CallsPerTrajectory) }},
		{"invalid calls", func(c *evalColumn) string { return share(c.stats.InvalidCallRate, calls(c.stats)) }},
		{"timeouts", func(c *evalColumn) string { return share(c.stats.TimeoutRate, calls(c.stats)) }},
		{"groups, unequal correctness", func(c *evalColumn) string {
			return share(float64(c.unequal)/float64(max(c.groups, 1)), c.groups)
		}},
		{"groups, unequal rewards", func(c *evalColumn) string { return share(c.stats.GroupsWithSignal, c.stats.Groups) }},
		{"reward mean", func(c *evalColumn) string { return fmt.Sprintf("%.3f", c.stats.RewardMean) }},
		{"response tokens mean", func(c *evalColumn) string { return fmt.Sprintf("%.1f", c.stats.ResponseTokens) }},
	}
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, c := range cols {
		fmt.Fprintf(tw, "\t%s", c.name)
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		fmt.Fprint(tw, r.label)
		for _, c := range cols {
			fmt.Fprintf(tw, "\t%s", r.cell(c))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// intervalLabel heads the rows of the accuracy's and call rate's 95%
// intervals: over prompts (curves.ClusterRobust) from the figures' counts
// per prompt, which trainer.Evaluate records; a cell of figures without
// them says it is Wilson's over samples.
const intervalLabel = "  95% interval over prompts (CR1)"

// interval formats a share's interval as "90.0–92.5%", naming the method
// when it is not the interval over prompts.
func interval(s curves.Share) string {
	cell := fmt.Sprintf("%.1f–%.1f%%", 100*s.Lo, 100*s.Hi)
	if s.Method != curves.OverPrompts {
		cell += " (" + string(s.Method) + ")"
	}
	return cell
}

// unequalCorrectness reports whether some of g's samples are right and some
// wrong by the job's answer check.
func unequalCorrectness(job *orchestrator.Job, g *traj.Group) bool {
	right := 0
	for i := range g.Trajectories {
		t := g.Trajectories[i] // Score sets the reward: score a copy
		if job.Rewards.Score(&t, t.Answer) {
			right++
		}
	}
	return right > 0 && right < len(g.Trajectories)
}

// metaValue is the value of g's prompt meta field as the evaluation's split
// names it (fmt.Sprint of the JSON value; "(none)" when the field is absent).
func metaValue(g *traj.Group, field string) (string, error) {
	meta := g.Trajectories[0].Meta
	if len(meta) == 0 {
		return "(none)", nil
	}
	var fields map[string]any
	if err := json.Unmarshal(meta, &fields); err != nil {
		return "", fmt.Errorf("prompt %s: meta is not a JSON object: %w", g.PromptID, err)
	}
	v, ok := fields[field]
	if !ok {
		return "(none)", nil
	}
	return fmt.Sprint(v), nil
}

// calls is the number of tool calls behind stats' per-call rates.
func calls(s trainer.RolloutStats) int { return count(s.CallsPerTrajectory, s.Trajectories) }

// count turns a share of n back into the count it was computed from (the
// figures are k/n in float64, so the rounding is exact).
func count(rate float64, n int) int { return int(math.Round(rate * float64(n))) }

// share formats a rate of n as "91.3% (1870/2048)", or "n/a" when n is 0.
func share(rate float64, n int) string {
	if n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%% (%d/%d)", 100*rate, count(rate, n), n)
}
