// Command toolrl produces tool-use reinforcement-learning data: rollouts of an
// ONNX policy that calls tools, GRPO advantages, and datasets trainers load.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	goredis "github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/internal/interrupt"
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

// signalContext is the context of a verb's run: the first Ctrl-C (or
// SIGTERM) cancels it, a second one ends the process (interrupt.Start).
func signalContext(cmd *cobra.Command) (context.Context, func()) {
	w := interrupt.Start(cmd.Context(), nil, nil)
	return w.Context(), w.Stop
}

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
	applyUsageConventions(root)
	return root
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the CLI with args and returns its exit status.
func run(args []string, stdout, stderr io.Writer) int {
	goredis.SetLogger(goredisLog{})
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "toolrl:", err)
	return exitCode(err)
}

// exitCode is the exit status for an error a command returned: the one
// place errors map to exit codes.
func exitCode(err error) int {
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
