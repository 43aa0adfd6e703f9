// Command toolrl produces tool-use reinforcement-learning data: rollouts of an
// ONNX policy that calls tools, GRPO advantages, and datasets trainers load.
package main

import (
	"errors"
	"fmt"
	"os"

	goredis "github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// Exit codes: they mean the same thing for every verb.
const (
	exitOK          = 0
	exitFailure     = 1   // the command ran and failed
	exitUsage       = 2   // bad flags or arguments, or a capability not built yet
	exitInterrupted = 130 // stopped by SIGINT/SIGTERM after a clean shutdown
)

// usageError marks an error as the user's to fix (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitError carries an explicit exit code (e.g. 130 after an interrupt).
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "toolrl",
		Short: "Tool-use reinforcement-learning data: rollouts, advantages, datasets",
		Long: `toolrl runs an ONNX policy that calls tools, records every sampled token's
logprob and loss mask, scores the results with staged rewards, and computes
GRPO advantages that trainers pull from Redis, JSONL or Parquet.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newRolloutCmd(),
		newAdvantageCmd(),
		newLearnCmd(),
		newTrainCmd(),
		newPlotCmd(),
		newExportCmd(),
		newInspectCmd(),
		newTokenizeCmd(),
		newChatCmd(),
		newToolsCmd(),
		newModelCmd(),
		newBenchCmd(),
		newVersionCmd(),
	)
	return root
}

func main() {
	os.Exit(run())
}

func run() int {
	goredis.SetLogger(goredisLog{})
	err := newRootCmd().Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(os.Stderr, "toolrl:", err)
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}
