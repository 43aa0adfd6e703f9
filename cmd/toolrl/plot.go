package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/curves"
	"github.com/toolrl/toolrl/internal/atomicfile"
)

func newPlotCmd() *cobra.Command {
	var to, table string
	var labels []string
	var opts curves.Options
	cmd := &cobra.Command{
		Use:   "plot OUT [OUT...]",
		Short: "Draw a training run's learning curves as PNG charts",
		Long: `plot reads the metrics.jsonl and eval.jsonl that toolrl train writes into
its output folder OUT and draws one PNG chart per quantity against the
iteration:

  reward.png                 rollout and eval mean reward
  accuracy.png               rollout and eval accuracy, % of trajectories
  call_rate.png              rollout and eval share of trajectories with a tool call
  calls_per_trajectory.png   rollout and eval tool calls per trajectory
  response_length.png        rollout and eval response tokens per trajectory
  loss.png                   learner loss and its policy-gradient part
  grad_norm.png              learner gradient norm (before clipping)
  kl.png                     learner KL to the reference (k3, nats per token)
  rollout_mismatch.png       behaviour vs learner logprobs, mean and max |Δ| (log axis)
  clip_fraction.png          learner clip fraction, low+high and dual
  entropy.png                learner entropy (nats per token)
  eval_accuracy_by_F.png     eval accuracy by each value of split field F
  eval_call_rate_by_F.png    eval call rate by each value of split field F

Each run has its own colour (Okabe–Ito, colour-blind safe); a run's rollout
series is a thin solid line in a light shade, its eval series a thick dashed
line with markers in the full shade and, for shares (accuracy, call rate), a
95% band over prompts (cluster-robust, CR1; Wilson over samples for an
eval.jsonl without per-prompt counts, as the legend says). Eval points sit at the iteration after which the version
was evaluated (0: before the first update). Shares are drawn in % on an axis
fitted to the data within 0–100 %; never-negative figures start at 0; the
mismatch, which spans decades, is drawn on a log axis. Iterations whose
learner took no optimizer step have no learner points. Several OUT folders
are overlaid in each chart, named in the legend by folder name or --label.
The charts go to OUT/plots for one run and to FIRST/plots/overlay for several (FIRST: the first OUT), unless --to says
where; files are replaced.`,
		Example: `  toolrl plot out/calc-smoke
  toolrl plot out/run1 out/run2 --label sync,async --to out/compare`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("plot: name at least one OUT folder (the output folder of toolrl train)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Validate(); err != nil {
				return usageErrorf("plot: %v", err)
			}
			if len(labels) > 0 && len(labels) != len(args) {
				return usageErrorf("plot: --label names %d runs, want one label per OUT (%d)", len(labels), len(args))
			}
			runs, err := curves.ReadRuns(args, labels)
			switch {
			case errors.Is(err, curves.ErrNoMetrics) || errors.Is(err, fs.ErrNotExist):
				return usageError{fmt.Errorf("plot: %w", err)}
			case err != nil:
				return fmt.Errorf("plot: %w", err)
			}
			dir := to
			if dir == "" {
				dir = curves.DefaultDir(args)
			}
			charts, err := curves.Write(dir, runs, opts)
			if err != nil {
				return fmt.Errorf("plot: %w", err)
			}
			w := cmd.OutOrStdout()
			if table != "" {
				err := atomicfile.Write(table, func(w io.Writer) error { return curves.WriteTable(w, runs) })
				if err != nil {
					return fmt.Errorf("plot: --table %s: %w", table, err)
				}
				defer fmt.Fprintf(w, "  %s (table)\n", table)
			}
			var names []string
			for _, r := range runs {
				names = append(names, fmt.Sprintf("%s (%d iterations, %d evals)", r.Label, len(r.Iterations), len(r.Evals)))
			}
			fmt.Fprintf(w, "plot: %s\n", strings.Join(names, ", "))
			for _, c := range charts {
				if c.Path == "" {
					fmt.Fprintf(w, "  %-28s skipped: no points\n", c.Name)
					continue
				}
				fmt.Fprintf(w, "  %s\n", c.Path)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&table, "table", "", "also write a markdown table of each run's first and last evaluation (95% intervals over prompts) to this file")
	f.StringVar(&to, "to", "", "folder for the charts (default OUT/plots for one run, FIRST/plots/overlay for several)")
	f.StringSliceVar(&labels, "label", nil, "legend names of the runs, one per OUT, comma-separated (default: the folders' names)")
	f.IntVar(&opts.Width, "width", 1000, "chart width in pixels (200–8000)")
	f.IntVar(&opts.Height, "height", 600, "chart height in pixels (200–8000)")
	return cmd
}
