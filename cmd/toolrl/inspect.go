package main

import "github.com/spf13/cobra"

func newInspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect",
		Short: "Summarise a trajectory or advantage file",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notBuilt("inspect")
		},
	}
}
