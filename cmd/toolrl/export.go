package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/samefile"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
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
			src, err := newExportSource(ctx, from, which, job)
			if err != nil {
				return err
			}
			defer src.close()
			opts := export.WriterOptions{RowsPerGroup: rowsPerGroup, RewardParts: parts}
			start := time.Now()
			var n int64
			switch src.kind {
			case export.Trajectories:
				n, err = runExport(ctx, src, to, opts, src.trajectories, export.CreateTrajectories, func(t *traj.Trajectory) map[string]float64 { return t.Reward.Parts })
			default:
				n, err = runExport(ctx, src, to, opts, src.advantages, export.CreateAdvantages, func(a *traj.AdvantageRecord) map[string]float64 { return a.Reward.Parts })
			}
			if ctx.Err() != nil {
				return exitError{code: exitInterrupted, err: fmt.Errorf("export interrupted; %s not written", to)}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "exported %d %s from %s to %s in %s\n", n, src.kind, src.name, to, time.Since(start).Round(time.Millisecond))
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

// runExport copies src into a new file at to. For Parquet it first finds
// every reward part: cheaply for a file (export.ScanRewardParts), with a
// first pass over the records for a stream. The writer replaces the file at
// to only on success: on failure (or Ctrl-C) a file there stays as it was.
func runExport[T any](ctx context.Context, src *exportSource, to string, opts export.WriterOptions,
	open func(context.Context) (export.Reader[T], error), create func(string, export.WriterOptions) (export.Writer[T], error),
	partsOf func(*T) map[string]float64) (int64, error) {
	if format, _ := export.FormatOf(to); format == export.Parquet {
		var parts []string
		var err error
		if src.path != "" {
			parts, err = export.ScanRewardParts(src.path)
		} else {
			parts, err = scanRewardParts(ctx, open, partsOf)
		}
		if err != nil {
			return 0, err
		}
		opts.RewardParts = append(opts.RewardParts, parts...)
	}
	r, err := open(ctx)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	w, err := create(to, opts)
	if err != nil {
		return 0, err
	}
	n, err := export.Copy(w, cancelable[T]{ctx.Err, r})
	if err != nil {
		export.Abort(w) // a file at --to stays as it was
		return n, err
	}
	if err := w.Close(); err != nil {
		return n, err
	}
	return n, nil
}

func scanRewardParts[T any](ctx context.Context, open func(context.Context) (export.Reader[T], error), partsOf func(*T) map[string]float64) ([]string, error) {
	r, err := open(ctx)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	set := map[string]bool{}
	src := cancelable[T]{ctx.Err, r}
	for {
		rec, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		for p := range partsOf(&rec) {
			set[p] = true
		}
	}
	parts := make([]string, 0, len(set))
	for p := range set {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	return parts, nil
}

// cancelable stops a reader once stopped (a context's Err) reports an error.
type cancelable[T any] struct {
	stopped func() error
	export.Reader[T]
}

func (c cancelable[T]) Next() (T, error) {
	if err := c.stopped(); err != nil {
		var zero T
		return zero, err
	}
	return c.Reader.Next()
}

// exportSource is the input of an export: a file, or a job's stream.
type exportSource struct {
	name   string
	kind   export.Kind
	path   string                  // a file
	client goredis.UniversalClient // or a stream
	stream string
	lastID string // the stream's last entry when the export started
}

func newExportSource(ctx context.Context, from, which, job string) (*exportSource, error) {
	if !strings.HasPrefix(from, "redis://") && !strings.HasPrefix(from, "rediss://") {
		if job != "" {
			return nil, usageErrorf("export: --job is for a redis:// --from (a file holds its records)")
		}
		if _, err := export.FormatOf(from); err != nil {
			return nil, usageErrorf("export: --from: %v", err)
		}
		kind, err := export.DetectKind(from)
		if err != nil {
			return nil, err
		}
		return &exportSource{name: from, kind: kind, path: from}, nil
	}
	u, err := url.Parse(from)
	if err != nil {
		return nil, usageErrorf("export: --from %s does not parse", stream.Redact(from))
	}
	// The path is the database, as in every toolrl Redis URL (stream.ParseURL);
	// a job written there (the form of export before #30) is refused.
	if p := strings.Trim(u.Path, "/"); p != "" && strings.Trim(p, "0123456789") != "" {
		return nil, usageErrorf("export: --from %s: the URL path is the database, as in every toolrl Redis URL; name the job with --job %s", stream.Redact(from), p)
	}
	if job != "" {
		if err := stream.ValidateJob(job); err != nil {
			return nil, usageErrorf("export: --job: %v", err)
		}
	}
	client, err := stream.Connect(ctx, from, stream.ConnectOptions{ClientName: "toolrl-export"})
	if err != nil {
		return nil, err
	}
	keys := stream.JobKeys(job)
	if err := requireJob(ctx, client, from, keys); err != nil {
		client.Close()
		return nil, err
	}
	src := &exportSource{client: client, kind: export.Trajectories, stream: keys.Groups}
	if which == "advantages" {
		src.kind, src.stream = export.Advantages, keys.Advantages
	}
	src.name = src.stream
	if err := requireStream(ctx, client, from, keys, src.stream, which); err != nil {
		client.Close()
		return nil, err
	}
	if src.lastID, err = stream.LastID(ctx, client, src.stream); err != nil {
		client.Close()
		return nil, fmt.Errorf("export: %w", err)
	}
	return src, nil
}

func (s *exportSource) close() {
	if s.client != nil {
		s.client.Close()
	}
}

func (s *exportSource) trajectories(ctx context.Context) (export.Reader[traj.Trajectory], error) {
	if s.path != "" {
		return export.OpenTrajectories(s.path)
	}
	return newStreamRecords(ctx, s, func(m stream.Message) ([]traj.Trajectory, error) {
		// Either group format (a rollout's ?group_format=binary).
		g, err := stream.DecodeGroupEntry(m)
		if err != nil {
			return nil, err
		}
		return g.Trajectories, nil
	}), nil
}

func (s *exportSource) advantages(ctx context.Context) (export.Reader[traj.AdvantageRecord], error) {
	if s.path != "" {
		return export.OpenAdvantages(s.path)
	}
	return newStreamRecords(ctx, s, func(m stream.Message) ([]traj.AdvantageRecord, error) {
		// Either record format (advantage serve --record-format binary).
		r, err := stream.DecodeRecordEntry(m)
		if err != nil {
			return nil, err
		}
		return []traj.AdvantageRecord{*r}, nil
	}), nil
}

// streamRecords is an export.Reader of the records decoded from each entry a
// stream.RangeReader yields, up to src.lastID.
type streamRecords[T any] struct {
	// next reads the next entry (export.Reader's Next takes no context, so
	// it is bound here, once, where the reader is made).
	next    func() (stream.Message, error)
	stream  string
	decode  func(stream.Message) ([]T, error)
	pending []T
}

func newStreamRecords[T any](ctx context.Context, src *exportSource, decode func(stream.Message) ([]T, error)) *streamRecords[T] {
	entries := stream.NewRangeReader(src.client, src.stream, src.lastID)
	return &streamRecords[T]{next: func() (stream.Message, error) { return entries.Next(ctx) },
		stream: src.stream, decode: decode}
}

func (r *streamRecords[T]) Next() (T, error) {
	var zero T
	for len(r.pending) == 0 {
		e, err := r.next()
		if err != nil {
			return zero, err
		}
		recs, err := r.decode(e)
		if err != nil {
			return zero, fmt.Errorf("%s: %w", r.stream, err)
		}
		r.pending = recs
	}
	rec := r.pending[0]
	r.pending = r.pending[1:]
	return rec, nil
}

func (r *streamRecords[T]) Close() error { return nil }

// requireJob refuses an export with no --job, or whose --job has no keys in
// the Redis (and database) --from reaches: the usage error lists the jobs
// found there (SCAN, never KEYS).
func requireJob(ctx context.Context, client goredis.UniversalClient, from string, keys stream.Keys) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if keys.Job != "" {
		n, err := client.Exists(ctx, keys.Prompts, keys.Groups, keys.Advantages, keys.Settings, keys.Policy, keys.GroupsWritten).Result()
		if err != nil {
			return fmt.Errorf("export: look for job %q: %w", keys.Job, err)
		}
		if n > 0 {
			return nil
		}
	}
	list, err := listJobs(ctx, client, from)
	if err != nil {
		return err
	}
	if keys.Job == "" {
		return usageErrorf("export: --from %s needs --job JOB; jobs found: %s", stream.Redact(from), list)
	}
	return usageErrorf("export: --from %s: job %q has no keys there; jobs found: %s (the URL path is the database, --job the job)", stream.Redact(from), keys.Job, list)
}

// requireStream refuses a job that has keys but not the stream export
// reads (no group written yet, or --stream advantages of a job no advantage
// service served): exporting it would write an empty file over --to.
func requireStream(ctx context.Context, client goredis.UniversalClient, from string, keys stream.Keys, name, which string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := client.Exists(ctx, name).Result()
	if err != nil {
		return fmt.Errorf("export: look for stream %s: %w", name, err)
	}
	if n > 0 {
		return nil
	}
	list, err := listJobs(ctx, client, from)
	if err != nil {
		return err
	}
	return usageErrorf("export: --from %s: job %q has no stream %s (--stream %s): nothing to export; jobs found: %s", stream.Redact(from), keys.Job, name, which, list)
}

// listJobs returns the jobs that have keys in the Redis client reaches,
// comma-separated ("none"), found with SCAN (never KEYS).
func listJobs(ctx context.Context, client goredis.UniversalClient, from string) (string, error) {
	found := map[string]bool{}
	iter := client.Scan(ctx, 0, "toolrl:{*}:*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if i, j := strings.IndexByte(k, '{'), strings.IndexByte(k, '}'); i >= 0 && j > i {
			found[k[i+1:j]] = true
		}
	}
	if err := iter.Err(); err != nil {
		return "", fmt.Errorf("export: list the jobs in %s: %w", stream.Redact(from), err)
	}
	jobs := make([]string, 0, len(found))
	for j := range found {
		jobs = append(jobs, j)
	}
	slices.Sort(jobs)
	if len(jobs) == 0 {
		return "none", nil
	}
	return strings.Join(jobs, ", "), nil
}
