package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
)

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

func (s *redisSink) SettingsWhere() string { return stream.JobKeys(s.job).Settings }

// StoredSettings reads the job's settings key; the job holds data when a
// group was written into it.
func (s *redisSink) StoredSettings(ctx context.Context) (*Settings, bool, error) {
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

// RecordSettings sets the job's settings key; with replace false only when
// it is absent (SET NX), so of two workers starting together one records
// and the other is compared with it.
func (s *redisSink) RecordSettings(ctx context.Context, rec *Settings, replace bool) (*Settings, error) {
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
