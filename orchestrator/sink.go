package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/reward"
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

// groupHeader is the part of a trajectory line resume needs.
type groupHeader struct {
	GroupID   string `json:"group_id"`
	GroupSize int    `json:"group_size"`
}

// jsonlSink appends groups to a JSONL file of trajectories, one line each,
// flushed (fsync) after every group. On resume it cuts a group a crash left
// half-written, so the file only ever holds whole groups. Its settings
// record is the sidecar SettingsPath(path).
type jsonlSink struct {
	fileSettings // fresh: truncate on the first write instead of appending
	path         string
	w            export.TrajectoryWriter
}

// Resume scans the file's group blocks (a group's lines are contiguous)
// and truncates the file after the last complete one.
func (s *jsonlSink) Resume(ctx context.Context) (map[string]bool, error) {
	done := map[string]bool{}
	f, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var offset, goodEnd int64
	var cur groupHeader
	count, line := 0, 0
	for {
		raw, err := r.ReadBytes('\n')
		if len(raw) > 0 && raw[len(raw)-1] == '\n' {
			line++
			var h groupHeader
			if jerr := json.Unmarshal(raw, &h); jerr != nil || h.GroupID == "" {
				return nil, fmt.Errorf("%s:%d: not a trajectory line (resume needs the job's own output): %v", s.path, line, jerr)
			}
			if h.GroupID != cur.GroupID {
				cur, count = h, 0
			}
			count++
			offset += int64(len(raw))
			if count == cur.GroupSize {
				done[cur.GroupID] = true
				goodEnd = offset
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", s.path, err)
		}
	}
	if st, err := f.Stat(); err == nil && st.Size() != goodEnd {
		if err := os.Truncate(s.path, goodEnd); err != nil {
			return nil, fmt.Errorf("cut the partial group at the end of %s: %w", s.path, err)
		}
	}
	return done, nil
}

func (s *jsonlSink) WriteGroup(ctx context.Context, g *traj.Group) (bool, error) {
	if s.w == nil {
		// In place, appended to and flushed per group: the file is the log
		// a resume reads after a crash (a fresh run starts it empty), not a
		// temporary file renamed into place at Close.
		if s.fresh {
			if err := os.Truncate(s.path, 0); err != nil && !errors.Is(err, os.ErrNotExist) {
				return false, fmt.Errorf("replace %s: %w", s.path, err)
			}
		}
		w, err := export.CreateTrajectories(s.path, export.WriterOptions{Append: true})
		if err != nil {
			return false, err
		}
		s.w = w
	}
	if err := s.w.Write(g.Trajectories...); err != nil {
		return false, err
	}
	return true, s.w.Flush()
}

func (s *jsonlSink) Close() error {
	if s.w == nil {
		// A run that wrote nothing still leaves its (possibly empty) output.
		flags := os.O_CREATE | os.O_WRONLY
		if s.fresh {
			flags |= os.O_TRUNC
		}
		f, err := os.OpenFile(s.path, flags, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	}
	err := s.w.Close()
	s.w = nil
	return err
}

// parquetSink writes a Parquet file of trajectories. Parquet files cannot be
// appended to, so on resume the complete groups of the old file are copied
// into a new one, written beside it and renamed over it at Close: a crash
// leaves the old file intact. Its settings record is the sidecar
// SettingsPath(path).
type parquetSink struct {
	fileSettings
	path, tmp string
	keep      []traj.Trajectory
	w         export.TrajectoryWriter
}

func (s *parquetSink) Resume(ctx context.Context) (map[string]bool, error) {
	done := map[string]bool{}
	r, err := export.OpenTrajectories(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	byGroup := map[string][]traj.Trajectory{}
	var order []string
	for {
		t, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if _, seen := byGroup[t.GroupID]; !seen {
			order = append(order, t.GroupID)
		}
		byGroup[t.GroupID] = append(byGroup[t.GroupID], t)
	}
	for _, id := range order {
		members := byGroup[id]
		if len(members) == members[0].GroupSize {
			done[id] = true
			s.keep = append(s.keep, members...)
		}
	}
	return done, nil
}

func (s *parquetSink) open() error {
	s.tmp = s.path + ".partial"
	w, err := export.CreateTrajectories(s.tmp+".parquet", export.WriterOptions{RewardParts: reward.PartNames()})
	if err != nil {
		return err
	}
	s.w = w
	if len(s.keep) > 0 {
		if err := s.w.Write(s.keep...); err != nil {
			return err
		}
		s.keep = nil
	}
	return nil
}

func (s *parquetSink) WriteGroup(ctx context.Context, g *traj.Group) (bool, error) {
	if s.w == nil {
		if err := s.open(); err != nil {
			return false, err
		}
	}
	return true, s.w.Write(g.Trajectories...)
}

func (s *parquetSink) Close() error {
	if s.w == nil {
		if len(s.keep) == 0 {
			if _, err := os.Stat(s.path); err == nil {
				return nil // resumed with nothing new: the old file stands
			}
		}
		if err := s.open(); err != nil {
			return err
		}
	}
	if err := s.w.Close(); err != nil {
		return err
	}
	s.w = nil
	return os.Rename(s.tmp+".parquet", s.path)
}

// redisSink adds each group as one entry of the job's groups stream, with
// the idempotent producer script, so a retried or resumed write never
// duplicates a group. A write that fails on a connection error (the server
// restarting, a failover) is retried with backoff for the URL's retry=
// option (default stream.DefaultWriteRetry, 30 s), then the rollout fails.
// The URL's group_format=binary option writes the binary group format
// (stream.GroupFormatOf), which the advantage service reads; JSON otherwise.
// Its settings record is the job's key stream.Keys.Settings.
type redisSink struct {
	client   goredis.UniversalClient
	producer *stream.Producer
	job      string
}

func openRedisSink(ctx context.Context, url, job string) (*redisSink, error) {
	if err := stream.ValidateJob(job); err != nil {
		return nil, err
	}
	retry, err := stream.WriteRetry(url)
	if err != nil {
		return nil, fmt.Errorf("out: %w", err)
	}
	groupFormat, err := stream.GroupFormatOf(url)
	if err != nil {
		return nil, fmt.Errorf("out: %w", err)
	}
	client, err := stream.Connect(ctx, url, stream.ConnectOptions{})
	if err != nil {
		return nil, fmt.Errorf("out %s: %w", stream.Redact(url), err)
	}
	return &redisSink{client: client, job: job,
		producer: stream.NewProducer(client, stream.ProducerOptions{Groups: []string{stream.AdvantageGroup}, RetryFor: retry, GroupFormat: groupFormat,
			OnRetry: func(err error, wait time.Duration) {
				slog.Warn("redis sink: write failed, retrying", "out", stream.Redact(url), "err", err, "wait", wait, "retry_for", retry)
			}})}, nil
}

func (s *redisSink) Resume(ctx context.Context) (map[string]bool, error) {
	ids, err := s.client.SMembers(ctx, stream.JobKeys(s.job).GroupsWritten).Result()
	if err != nil {
		return nil, fmt.Errorf("read written groups: %w", err)
	}
	done := make(map[string]bool, len(ids))
	for _, id := range ids {
		done[id] = true
	}
	return done, nil
}

func (s *redisSink) WriteGroup(ctx context.Context, g *traj.Group) (bool, error) {
	return s.producer.AddGroup(ctx, s.job, g)
}

func (s *redisSink) Close() error { return s.client.Close() }

func (s *redisSink) settingsWhere() string { return stream.JobKeys(s.job).Settings }

// storedSettings reads the job's settings key; the job holds data when a
// group was written into it.
func (s *redisSink) storedSettings(ctx context.Context) (*Settings, bool, error) {
	keys := stream.JobKeys(s.job)
	data, err := s.client.Get(ctx, keys.Settings).Bytes()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, false, fmt.Errorf("read %s: %w", keys.Settings, err)
	}
	written, cerr := s.client.SCard(ctx, keys.GroupsWritten).Result()
	if cerr != nil {
		return nil, false, fmt.Errorf("read %s: %w", keys.GroupsWritten, cerr)
	}
	if errors.Is(err, goredis.Nil) {
		return nil, written > 0, nil
	}
	rec, err := decodeSettings(data, keys.Settings)
	return rec, written > 0, err
}

// recordSettings sets the job's settings key; with replace false only when
// it is absent (SET NX), so of two workers starting together one records
// and the other is compared with it.
func (s *redisSink) recordSettings(ctx context.Context, rec *Settings, replace bool) (*Settings, error) {
	key := stream.JobKeys(s.job).Settings
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	if replace {
		if err := s.client.Set(ctx, key, data, 0).Err(); err != nil {
			return nil, fmt.Errorf("write %s: %w", key, err)
		}
		return rec, nil
	}
	set, err := s.client.SetNX(ctx, key, data, 0).Result()
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", key, err)
	}
	if set {
		return rec, nil
	}
	stored, err := s.client.Get(ctx, key).Bytes()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return decodeSettings(stored, key)
}

// DisplayOut is how an output (a file path or a Redis URL) is printed: a
// URL with its password and user name hidden (stream.Redact), a path as is.
func DisplayOut(out string) string {
	if strings.Contains(out, "://") {
		return stream.Redact(out)
	}
	return out
}
