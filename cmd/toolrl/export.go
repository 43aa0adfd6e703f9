package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/export/jobstream"
	"github.com/toolrl/toolrl/internal/samefile"
)

func newExportCmd() *cobra.Command {
	var from, to, which, job string
	var rowsPerGroup int64
	var parts []string
	cmd := &cobra.Command{
		Use:   "export --from FILE|redis://HOST:PORT[/DB] [--job JOB] --to FILE.parquet|FILE.jsonl[.gz]",
		Short: "Convert or drain trajectories to JSONL or Parquet",
		Long: `export copies trajectories or advantage records into a dataset file. The
output format follows the extension of --to: .jsonl, .jsonl.gz or .parquet.

--from FILE converts a file (.jsonl, .jsonl.gz or .parquet; the records' kind
is read from the file). A JSONL file of groups (one traj.Group per line) gives
trajectories.

--from redis://HOST:PORT --job JOB reads the job's groups stream
toolrl:{JOB}:groups (or, with --stream advantages, toolrl:{JOB}:advantages)
with XRANGE, up to the entry that was last when the export started. It reads
through no consumer group, so it consumes nothing: the advantage service and
trainers still get every entry. As in every toolrl Redis URL, the path is the
database (redis://HOST:PORT/1, or ?db=1) and other options go in the query
(?cluster=true, see docs/redis.md); the password comes from the URL or
$TOOLRL_REDIS_PASSWORD. A job that is not there, or that has no such stream,
is refused with the jobs found.

Parquet output has one reward_<part> column per reward part, so export first
finds every part: from the columns of a Parquet input, with a light first pass
over a JSONL input or a stream.`,
		Example: `  toolrl export --from out/calc.jsonl --to out/calc.parquet
  toolrl export --from redis://127.0.0.1:6379 --job calc-demo --to out/groups.parquet
  toolrl export --from redis://127.0.0.1:6379/0 --job calc-demo --stream advantages --to out/adv.parquet`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" || to == "" {
				return usageErrorf("export: --from and --to are required")
			}
			if _, err := export.FormatOf(to); err != nil {
				return usageErrorf("export: --to: %v", err)
			}
			if err := samefile.Refuse(samefile.Path{Flag: "--to", Path: to}, samefile.Path{Flag: "--from", Path: from}); err != nil {
				return usageErrorf("export: %v", err)
			}
			if rowsPerGroup < 0 {
				return usageErrorf("export: --rows-per-group is %d, want ≥ 0", rowsPerGroup)
			}
			if which != "groups" && which != "advantages" {
				return usageErrorf("export: --stream is %q, want groups or advantages", which)
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			in, closeInput, err := openExportInput(ctx, from, which, job)
			if err != nil {
				return err
			}
			defer closeInput()
			start := time.Now()
			n, err := export.Convert(ctx, in, to, export.WriterOptions{RowsPerGroup: rowsPerGroup, RewardParts: parts})
			if ctx.Err() != nil {
				return exitError{code: exitInterrupted, err: fmt.Errorf("export interrupted; %s not written", to)}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "exported %d %s from %s to %s in %s\n", n, in.Kind, in.Name, to, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "input: a .jsonl, .jsonl.gz or .parquet file, or redis://HOST:PORT/JOB")
	f.StringVar(&to, "to", "", "output: FILE.parquet, FILE.jsonl or FILE.jsonl.gz")
	f.StringVar(&job, "job", "", "with redis://: the job whose stream to read")
	f.StringVar(&which, "stream", "groups", "with redis://: the stream to read, groups (trajectories) or advantages")
	f.Int64Var(&rowsPerGroup, "rows-per-group", 0, fmt.Sprintf("Parquet rows per row group (0: %d)", export.DefaultRowsPerGroup))
	f.StringSliceVar(&parts, "reward-parts", nil, "extra reward parts to give a reward_<part> column even if no record has them")
	return cmd
}

// openExportInput opens --from: a dataset file, or a job's stream
// (export/jobstream), whose refusals are usage errors.
func openExportInput(ctx context.Context, from, which, job string) (export.Input, func(), error) {
	if !jobstream.IsURL(from) {
		if job != "" {
			return export.Input{}, nil, usageErrorf("export: --job is for a redis:// --from (a file holds its records)")
		}
		if _, err := export.FormatOf(from); err != nil {
			return export.Input{}, nil, usageErrorf("export: --from: %v", err)
		}
		in, err := export.FileInput(from)
		return in, func() {}, err
	}
	kind := export.Trajectories
	if which == "advantages" {
		kind = export.Advantages
	}
	s, err := jobstream.Open(ctx, from, job, kind)
	var refused *jobstream.RequestError
	if errors.As(err, &refused) {
		return export.Input{}, nil, usageError{err}
	}
	if err != nil {
		return export.Input{}, nil, err
	}
	return s.Input(), func() { s.Close() }, nil
}
