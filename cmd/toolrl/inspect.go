package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/traj"
)

func newInspectCmd() *cobra.Command {
	var bins, width int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Summarise a trajectory or advantage file",
		Long: `inspect reads a .jsonl, .jsonl.gz or .parquet file of trajectories or
advantage records (validating every record) and prints its schema (for
Parquet: row groups, key-value metadata and columns; for JSONL: the columns
it would have as Parquet), counts of records, groups and tokens, a reward
summary with its parts, tool-call rates and a text histogram of the rewards.
Trajectories that carry ref_log_prob (rollout --ref-model) add the mismatch
between the recorded logprobs and the reference's over the policy tokens: mean
and max |Δlogprob| and mean k3, the learner's rollout_mismatch statistics. A
rollout by a quantized policy scored with the float32 folder as --ref-model
measures the quantization's off-policy gap.`,
		Example: `  toolrl inspect out/calc.parquet
  toolrl inspect --bins 20 out/advantages.jsonl
  toolrl inspect --json out/calc.parquet | jq .summary.reward`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if bins < 1 || width < 1 {
				return usageErrorf("inspect: --bins and --width must be ≥ 1")
			}
			path := args[0]
			if _, err := export.FormatOf(path); err != nil {
				return usageErrorf("inspect: %v", err)
			}
			info, err := export.Stat(path)
			if errors.Is(err, export.ErrNoRecords) {
				fmt.Fprintf(cmd.OutOrStdout(), "file             %s (%s, %d bytes)\nrecords          0\n", path, info.Format, info.Size)
				return nil
			}
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			summary := export.NewSummary(info.Kind)
			var mismatch learner.RefMismatch
			switch info.Kind {
			case export.Trajectories:
				err = export.ForEachRecord(ctx, path, export.OpenTrajectories, func(t *traj.Trajectory) {
					summary.AddTrajectory(t)
					mismatch.Add(t)
				})
			default:
				err = export.ForEachRecord(ctx, path, export.OpenAdvantages, summary.AddAdvantage)
			}
			if err != nil {
				if ctx.Err() != nil {
					return exitError{code: exitInterrupted, err: err}
				}
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				report, err := export.NewFileReport(info, summary, bins)
				if err != nil {
					return err
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					export.FileReport
					// RefMismatch is present when the trajectories carry ref_log_prob.
					RefMismatch *learner.Mismatch `json:"ref_mismatch,omitempty"`
				}{report, mismatch.Report()})
			}
			if err := info.WriteText(out, summary.RewardParts()); err != nil {
				return err
			}
			if err := summary.WriteText(out, bins, width); err != nil {
				return err
			}
			return mismatch.WriteText(out)
		},
	}
	cmd.Flags().IntVar(&bins, "bins", 10, "reward histogram bins")
	cmd.Flags().IntVar(&width, "width", 40, "longest histogram bar, in characters")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (file facts, columns, summary) instead of text")
	return cmd
}
