package main

import "github.com/spf13/cobra"

func newRolloutCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rollout",
		Short: "Run a rollout job: G samples per prompt, tool calls, rewards",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notBuilt("rollout (orchestrator)")
		},
	}
}
