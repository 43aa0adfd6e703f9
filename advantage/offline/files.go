package offline

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/toolrl/toolrl/export"
)

// FileOptions configures RunFiles: Run's options, and the output file's.
type FileOptions struct {
	Options
	// RewardParts get a reward_<part> column in a Parquet output even if its
	// first row group lacks them (export.WriterOptions.RewardParts).
	RewardParts []string
}

// FileStats is what RunFiles did.
type FileStats struct {
	Stats
	// Elapsed is the pass itself: from the first read to the output closed
	// (opening the files, and loading a RefScorer, are not counted).
	Elapsed time.Duration
}

// Write prints the pass's summary as toolrl advantage does: records,
// tokens and throughput, then the groups dropped, spilled and scored.
func (st FileStats) Write(w io.Writer) {
	secs := st.Elapsed.Seconds()
	fmt.Fprintf(w, "advantages: %d trajectories in %d groups -> %d records (%d tokens) in %.2fs, %.0f tokens/s\n",
		st.Trajectories, st.Groups, st.Records, st.Tokens, secs, float64(st.Tokens)/max(secs, 1e-9))
	fmt.Fprintf(w, "  zero-variance %d (dropped %d), stale %d (dropped %d), incomplete %d, spilled %d, ref-scored %d\n",
		st.ZeroVariance, st.DroppedZero, st.Stale, st.DroppedStale, st.Incomplete, st.Spilled, st.RefScored)
}

// RunFiles is Run from a file to a file: it reads the trajectories at in
// (export.OpenTrajectories: .jsonl, .jsonl.gz or .parquet, trajectories or
// JSONL groups) and writes the advantage records to a new file at out
// (export.CreateAdvantages, in the format out's extension names). The file
// at out is replaced only on success: on an error, or once ctx is done (the
// error is then ctx's or Run's), a file there stays as it was.
func RunFiles(ctx context.Context, in, out string, opts FileOptions) (FileStats, error) {
	src, err := export.OpenTrajectories(in)
	if err != nil {
		return FileStats{}, err
	}
	defer src.Close()
	dst, err := export.CreateAdvantages(out, export.WriterOptions{RewardParts: opts.RewardParts})
	if err != nil {
		return FileStats{}, err
	}
	start := time.Now()
	st, err := Run(ctx, src, dst, opts.Options)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		export.Abort(dst) // the file at out is replaced only on success
		return FileStats{Stats: st}, err
	}
	if err := dst.Close(); err != nil {
		return FileStats{Stats: st}, fmt.Errorf("close %s: %w", out, err)
	}
	return FileStats{Stats: st, Elapsed: time.Since(start)}, nil
}
