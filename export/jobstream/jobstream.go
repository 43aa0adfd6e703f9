// Package jobstream reads a job's Redis streams as the input of an export:
// its groups stream toolrl:{JOB}:groups as trajectories, or its advantages
// stream toolrl:{JOB}:advantages as advantage records. It reads with XRANGE,
// up to the entry that was last when the stream was opened, through no
// consumer group, so it consumes nothing: the advantage service and
// trainers still get every entry.
package jobstream

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
)

// IsURL reports whether from names a Redis server (redis:// or rediss://)
// rather than a file.
func IsURL(from string) bool {
	return strings.HasPrefix(from, "redis://") || strings.HasPrefix(from, "rediss://")
}

// RequestError is an error of Open that the caller must fix by asking
// otherwise: a URL that does not parse or whose path is not a database, a
// missing or invalid job, a job or stream that is not in the Redis the URL
// reaches (the message lists the jobs found there). Other errors of Open
// are failures to reach or read Redis.
type RequestError struct{ msg string }

func (e *RequestError) Error() string { return e.msg }

func requestErrorf(format string, args ...any) error {
	return &RequestError{fmt.Sprintf(format, args...)}
}

// Stream is one stream of a job, opened for reading by an export. It holds
// a Redis client: Close it.
type Stream struct {
	client goredis.UniversalClient
	kind   export.Kind
	key    string
	lastID string // the stream's last entry when it was opened
}

// Open connects to the Redis at rawURL (a toolrl Redis URL: the path is the
// database, options in the query, the password from the URL or
// $TOOLRL_REDIS_PASSWORD) and opens job's stream of kind: groups for
// export.Trajectories, advantages for export.Advantages. It refuses, with a
// *RequestError, no job, a job with no keys there, and a job without that
// stream (exporting it would write an empty file).
func Open(ctx context.Context, rawURL, job string, kind export.Kind) (*Stream, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, requestErrorf("export: --from %s does not parse", stream.Redact(rawURL))
	}
	// The path is the database, as in every toolrl Redis URL (stream.ParseURL);
	// a job written there (the form of export before #30) is refused.
	if p := strings.Trim(u.Path, "/"); p != "" && strings.Trim(p, "0123456789") != "" {
		return nil, requestErrorf("export: --from %s: the URL path is the database, as in every toolrl Redis URL; name the job with --job %s", stream.Redact(rawURL), p)
	}
	if job != "" {
		if err := stream.ValidateJob(job); err != nil {
			return nil, requestErrorf("export: --job: %v", err)
		}
	}
	client, err := stream.Connect(ctx, rawURL, stream.ConnectOptions{ClientName: "toolrl-export"})
	if err != nil {
		return nil, err
	}
	keys := stream.JobKeys(job)
	if err := requireJob(ctx, client, rawURL, keys); err != nil {
		client.Close()
		return nil, err
	}
	s := &Stream{client: client, kind: export.Trajectories, key: keys.Groups}
	which := "groups"
	if kind == export.Advantages {
		s.kind, s.key, which = export.Advantages, keys.Advantages, "advantages"
	}
	if err := requireStream(ctx, client, rawURL, keys, s.key, which); err != nil {
		client.Close()
		return nil, err
	}
	if s.lastID, err = stream.LastID(ctx, client, s.key); err != nil {
		client.Close()
		return nil, fmt.Errorf("export: %w", err)
	}
	return s, nil
}

// Close closes the stream's Redis client.
func (s *Stream) Close() error { return s.client.Close() }

// Input is the stream as the input of export.Convert: its readers read
// from the first entry up to the one that was last when it was opened.
func (s *Stream) Input() export.Input {
	return export.Input{Name: s.key, Kind: s.kind, Trajectories: s.Trajectories, Advantages: s.Advantages}
}

// Trajectories reads the trajectories of the groups stream's entries, in
// either group format (a rollout's ?group_format=binary).
func (s *Stream) Trajectories(ctx context.Context) (export.Reader[traj.Trajectory], error) {
	return newRecords(ctx, s, func(m stream.Message) ([]traj.Trajectory, error) {
		g, err := stream.DecodeGroupEntry(m)
		if err != nil {
			return nil, err
		}
		return g.Trajectories, nil
	}), nil
}

// Advantages reads the advantages stream's records, one per entry, in
// either record format (advantage serve --record-format binary).
func (s *Stream) Advantages(ctx context.Context) (export.Reader[traj.AdvantageRecord], error) {
	return newRecords(ctx, s, func(m stream.Message) ([]traj.AdvantageRecord, error) {
		r, err := stream.DecodeRecordEntry(m)
		if err != nil {
			return nil, err
		}
		return []traj.AdvantageRecord{*r}, nil
	}), nil
}

// records is an export.Reader of the records decoded from each entry a
// stream.RangeReader yields, up to the stream's lastID.
type records[T any] struct {
	// next reads the next entry (export.Reader's Next takes no context, so
	// it is bound here, once, where the reader is made).
	next    func() (stream.Message, error)
	stream  string
	decode  func(stream.Message) ([]T, error)
	pending []T
}

func newRecords[T any](ctx context.Context, s *Stream, decode func(stream.Message) ([]T, error)) *records[T] {
	entries := stream.NewRangeReader(s.client, s.key, s.lastID)
	return &records[T]{next: func() (stream.Message, error) { return entries.Next(ctx) },
		stream: s.key, decode: decode}
}

func (r *records[T]) Next() (T, error) {
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

func (r *records[T]) Close() error { return nil }

// requireJob refuses an export with no job, or whose job has no keys in
// the Redis (and database) from reaches: the error lists the jobs found
// there (SCAN, never KEYS).
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
		return requestErrorf("export: --from %s needs --job JOB; jobs found: %s", stream.Redact(from), list)
	}
	return requestErrorf("export: --from %s: job %q has no keys there; jobs found: %s (the URL path is the database, --job the job)", stream.Redact(from), keys.Job, list)
}

// requireStream refuses a job that has keys but not the stream to read (no
// group written yet, or the advantages of a job no advantage service
// served): exporting it would write an empty file.
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
	return requestErrorf("export: --from %s: job %q has no stream %s (--stream %s): nothing to export; jobs found: %s", stream.Redact(from), keys.Job, name, which, list)
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
