// Package sink is where a rollout's groups go: the Sink interface, the
// JSONL, Parquet and Redis sinks that OpenSink opens from an output name,
// and the in-memory sink of callers that use the groups in the same process.
// Every opened sink also keeps the settings record of its output (Settings,
// SettingsStore): the orchestrator builds the record from its job and checks
// it on resume; the sinks store it.
package sink

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
)

// Sink receives whole groups. A group is written whole or not at all: a sink
// that fails part-way must leave no partial group behind (or be able to cut
// it on the next Open, see Resume).
type Sink interface {
	// Resume readies the sink to add to what an earlier run of the job
	// wrote: it returns the ids of the groups already there, so the rerun
	// skips them, and a file sink cuts a group a crash left half-written
	// at the end (the one thing it changes). Called once, before any
	// WriteGroup, and only when the job resumes.
	Resume(ctx context.Context) (map[string]bool, error)
	// WriteGroup writes one complete group durably. It returns false when
	// the sink already held the group (a redelivered prompt in a distributed
	// job) and wrote nothing.
	WriteGroup(ctx context.Context, g *traj.Group) (bool, error)
	// Close flushes and releases the sink.
	Close() error
}

// OpenSink opens the sink that out names: a redis:// or rediss:// URL (the
// job's groups stream), or a .jsonl / .parquet file. With fresh, a file is
// replaced instead of appended to (a Redis stream is never cut: its writes
// stay idempotent).
func OpenSink(ctx context.Context, out, job string, fresh bool) (Sink, error) {
	if strings.HasPrefix(out, "redis://") || strings.HasPrefix(out, "rediss://") {
		s, err := openRedisSink(ctx, out, job)
		if err != nil {
			// Not return openRedisSink(...): a nil *redisSink in a Sink is a
			// non-nil interface, and the runner's cleanup would Close it.
			return nil, err
		}
		return s, nil
	}
	format, err := export.FormatOf(out)
	if err != nil {
		return nil, fmt.Errorf("out: %w", err)
	}
	if dir := filepath.Dir(out); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("out: %w", err)
		}
	}
	switch format {
	case export.JSONL:
		return &jsonlSink{fileSettings: fileSettings{out: out, fresh: fresh}, path: out}, nil
	case export.Parquet:
		return &parquetSink{fileSettings: fileSettings{out: out, fresh: fresh}, path: out}, nil
	}
	return nil, fmt.Errorf("out %s: the rollout writes .jsonl, .parquet or redis:// (not %s)", out, format)
}

// DisplayOut is how an output (a file path or a Redis URL) is printed: a
// URL with its password and user name hidden (stream.Redact), a path as is.
func DisplayOut(out string) string {
	if strings.Contains(out, "://") {
		return stream.Redact(out)
	}
	return out
}
