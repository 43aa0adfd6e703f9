package main

import "github.com/spf13/cobra"

func newBenchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks (actor throughput against peers)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notBuilt("bench")
		},
	}
}
