package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

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
			var mismatch refMismatch
			switch info.Kind {
			case export.Trajectories:
				err = summarise(cancelableOpen(ctx, export.OpenTrajectories), path, func(t *traj.Trajectory) {
					summary.AddTrajectory(t)
					mismatch.add(t)
				})
			default:
				err = summarise(cancelableOpen(ctx, export.OpenAdvantages), path, summary.AddAdvantage)
			}
			if err != nil {
				if ctx.Err() != nil {
					return exitError{code: exitInterrupted, err: err}
				}
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeInspectJSON(out, info, summary, mismatch.report(), bins)
			}
			if err := writeFileInfo(out, info, summary.RewardParts()); err != nil {
				return err
			}
			if err := summary.WriteText(out, bins, width); err != nil {
				return err
			}
			return mismatch.writeText(out)
		},
	}
	cmd.Flags().IntVar(&bins, "bins", 10, "reward histogram bins")
	cmd.Flags().IntVar(&width, "width", 40, "longest histogram bar, in characters")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (file facts, columns, summary) instead of text")
	return cmd
}

func summarise[T any](open func(string) (export.Reader[T], error), path string, add func(*T)) error {
	r, err := open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		add(&rec)
	}
}

func writeFileInfo(w io.Writer, info export.FileInfo, parts []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "file             %s (%s, %d bytes)\n", info.Path, info.Format, info.Size)
	fmt.Fprintf(&b, "schema           %s (%s)\n", info.Kind.Schema(), info.Kind)
	columns := info.Columns
	if info.Format == export.Parquet {
		fmt.Fprintf(&b, "parquet          %d rows in %d row groups, created by %s\n", info.Rows, info.RowGroups, info.CreatedBy)
		keys := make([]string, 0, len(info.Metadata))
		for k := range info.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  metadata       %s = %s\n", k, info.Metadata[k])
		}
		b.WriteString("columns\n")
	} else {
		var err error
		if columns, err = export.ParquetColumns(info.Kind, parts); err != nil {
			return err
		}
		b.WriteString("columns          (as Parquet)\n")
	}
	for _, c := range columns {
		fmt.Fprintf(&b, "  %-20s %s\n", c.Name, c.Type)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeInspectJSON prints the file facts, columns and summary as one JSON object.
func writeInspectJSON(w io.Writer, info export.FileInfo, summary *export.Summary, mismatch *learner.Mismatch, bins int) error {
	columns := info.Columns
	if info.Format != export.Parquet {
		var err error
		if columns, err = export.ParquetColumns(info.Kind, summary.RewardParts()); err != nil {
			return err
		}
	}
	type column struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	doc := struct {
		Path      string               `json:"path"`
		Format    string               `json:"format"`
		Schema    string               `json:"schema"`
		Bytes     int64                `json:"bytes"`
		Rows      int64                `json:"parquet_rows,omitempty"`
		RowGroups int                  `json:"parquet_row_groups,omitempty"`
		CreatedBy string               `json:"parquet_created_by,omitempty"`
		Metadata  map[string]string    `json:"parquet_metadata,omitempty"`
		Columns   []column             `json:"columns"`
		Summary   export.SummaryReport `json:"summary"`
		// RefMismatch is present when the trajectories carry ref_log_prob.
		RefMismatch *learner.Mismatch `json:"ref_mismatch,omitempty"`
	}{Path: info.Path, Format: info.Format.String(), Schema: info.Kind.Schema(), Bytes: info.Size,
		Rows: info.Rows, RowGroups: info.RowGroups, CreatedBy: info.CreatedBy, Metadata: info.Metadata,
		Summary: summary.Report(bins), RefMismatch: mismatch}
	for _, c := range columns {
		doc.Columns = append(doc.Columns, column{c.Name, c.Type})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// cancelableOpen wraps an opener so that its reader stops when ctx is done.
func cancelableOpen[T any](ctx context.Context, open func(string) (export.Reader[T], error)) func(string) (export.Reader[T], error) {
	return func(path string) (export.Reader[T], error) {
		r, err := open(path)
		if err != nil {
			return nil, err
		}
		return cancelable[T]{ctx.Err, r}, nil
	}
}
