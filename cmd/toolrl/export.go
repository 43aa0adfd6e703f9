package main

import "github.com/spf13/cobra"

func newExportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "export",
		Short: "Convert or drain trajectories to JSONL or Parquet",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notBuilt("export")
		},
	}
}
