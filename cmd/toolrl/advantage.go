package main

import "github.com/spf13/cobra"

func newAdvantageCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "advantage",
		Short: "Compute GRPO advantages offline or as a Redis service",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notBuilt("advantage (redis/advantage)")
		},
	}
}
