package learner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
)

// Batch is one update's records and, for a stream source, the entry ids
// that acknowledge them (parallel to Records).
type Batch struct {
	Records []traj.AdvantageRecord
	IDs     []string
}

// Source yields batches of advantage records. Next returns io.EOF when a
// finite source is exhausted. Ack acknowledges ids once the update that used
// them is published; Reject sets aside one entry that cannot be trained on,
// with the reason.
type Source interface {
	Next(ctx context.Context) (Batch, error)
	Ack(ctx context.Context, ids []string) error
	Reject(ctx context.Context, id string, reason string) error
}

// FileSource reads a JSONL or Parquet file of advantage records
// (export.OpenAdvantages) in batches of Size records (0: the whole file).
type FileSource struct {
	Path string
	Size int

	r    export.AdvantageReader
	done bool
}

// Next returns the next batch, io.EOF after the last.
func (f *FileSource) Next(ctx context.Context) (Batch, error) {
	if f.done {
		return Batch{}, io.EOF
	}
	if f.r == nil {
		r, err := export.OpenAdvantages(f.Path)
		if err != nil {
			return Batch{}, fmt.Errorf("read records %s: %w", f.Path, err)
		}
		f.r = r
	}
	var b Batch
	for f.Size <= 0 || len(b.Records) < f.Size {
		if err := ctx.Err(); err != nil {
			return Batch{}, err
		}
		rec, err := f.r.Next()
		if errors.Is(err, io.EOF) {
			f.done = true
			_ = f.r.Close()
			break
		}
		if err != nil {
			return Batch{}, fmt.Errorf("read records %s: %w", f.Path, err)
		}
		b.Records = append(b.Records, rec)
	}
	if len(b.Records) == 0 {
		return Batch{}, io.EOF
	}
	return b, nil
}

// Ack does nothing: a file is read once.
func (f *FileSource) Ack(context.Context, []string) error { return nil }

// Reject does nothing; a file source never calls it (bad records stop the run).
func (f *FileSource) Reject(context.Context, string, string) error { return nil }

// Close releases the file.
func (f *FileSource) Close() error {
	if f.r != nil && !f.done {
		f.done = true
		return f.r.Close()
	}
	return nil
}

// StreamOptions configure a StreamSource.
type StreamOptions struct {
	Job string
	// Group is the learner's consumer group (default "learner"); Consumer its
	// name in the group (default "learner": a restarted learner finds its own
	// pending entries by name).
	Group, Consumer string
	// Size is the records of one batch (default 256); MaxWait how long a
	// partly filled batch waits for more before it is trained on (default 10 s).
	Size    int
	MaxWait time.Duration
	// ClaimIdle: entries pending this long with another consumer are claimed
	// (default 10 min: an update and its publish must finish within it).
	ClaimIdle time.Duration
	Logger    *slog.Logger
}

// StreamSource reads the advantages stream toolrl:{JOB}:advantages through
// its own consumer group. It first re-reads what this consumer read before
// a restart and never acknowledged, then new entries. Entries that do not
// decode go to the job's dead letters at once.
type StreamSource struct {
	consumer *stream.Consumer
	opts     StreamOptions
	pending  string // cursor in the own pending list; "" once exhausted
	rejected int64
	// held keeps every delivered, unacknowledged entry, so that a rejected
	// one reaches the dead letters whole.
	held map[string]stream.Message
}

// NewStreamSource creates the consumer group if missing.
func NewStreamSource(ctx context.Context, client goredis.UniversalClient, opts StreamOptions) (*StreamSource, error) {
	if err := stream.ValidateJob(opts.Job); err != nil {
		return nil, err
	}
	if opts.Group == "" {
		opts.Group = stream.LearnerGroup
	}
	if opts.Consumer == "" {
		opts.Consumer = "learner"
	}
	if opts.Size <= 0 {
		opts.Size = 256
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 10 * time.Second
	}
	if opts.ClaimIdle <= 0 {
		opts.ClaimIdle = 10 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	keys := stream.JobKeys(opts.Job)
	c, err := stream.NewConsumer(client, stream.ConsumerOptions{
		Stream: keys.Advantages, Group: opts.Group, Consumer: opts.Consumer, DeadLetter: keys.Dead,
		Count: int64(min(opts.Size, 512)), Block: min(time.Second, opts.MaxWait), ClaimIdle: opts.ClaimIdle, MaxDeliveries: -1,
	})
	if err != nil {
		return nil, err
	}
	if err := c.EnsureGroup(ctx); err != nil {
		return nil, err
	}
	return &StreamSource{consumer: c, opts: opts, pending: "0", held: map[string]stream.Message{}}, nil
}

// Next returns up to Size records: the own pending list first, then new
// entries, waiting at most MaxWait once the batch holds a record (and for
// ever, until ctx ends, while it is empty).
func (s *StreamSource) Next(ctx context.Context) (Batch, error) {
	var b Batch
	var first time.Time
	for len(b.Records) < s.opts.Size {
		if len(b.Records) > 0 && time.Since(first) >= s.opts.MaxWait {
			break
		}
		var msgs []stream.Message
		var err error
		if s.pending != "" {
			msgs, err = s.consumer.ReadOwnPending(ctx, s.pending)
			if err == nil && len(msgs) == 0 {
				s.pending = ""
				continue
			}
			if len(msgs) > 0 {
				s.pending = msgs[len(msgs)-1].ID
			}
		} else {
			msgs, err = s.consumer.Read(ctx)
		}
		if err != nil {
			if ctx.Err() != nil && len(b.Records) > 0 {
				break
			}
			return b, err
		}
		for _, m := range msgs {
			if _, dup := s.held[m.ID]; dup {
				// Our own entry, trained and waiting for its version to be
				// published, reclaimed by XAUTOCLAIM after ClaimIdle: it is
				// already in a batch.
				continue
			}
			s.held[m.ID] = m
			if m.Values == nil { // trimmed while pending
				if err := s.Ack(ctx, []string{m.ID}); err != nil {
					return b, err
				}
				continue
			}
			rec, err := stream.DecodeRecordEntry(m)
			if err != nil {
				if err := s.Reject(ctx, m.ID, err.Error()); err != nil {
					return b, err
				}
				continue
			}
			if len(b.Records) == 0 {
				first = time.Now()
			}
			b.Records = append(b.Records, *rec)
			b.IDs = append(b.IDs, m.ID)
		}
		if ctx.Err() != nil {
			if len(b.Records) > 0 {
				break
			}
			return b, ctx.Err()
		}
	}
	return b, nil
}

// Ack acknowledges ids in the learner's group.
func (s *StreamSource) Ack(ctx context.Context, ids []string) error {
	for len(ids) > 0 {
		n := min(len(ids), 1000)
		if err := s.consumer.Ack(ctx, ids[:n]...); err != nil {
			return err
		}
		for _, id := range ids[:n] {
			delete(s.held, id)
		}
		ids = ids[n:]
	}
	return nil
}

// Reject moves one entry to the job's dead letters with the reason and
// acknowledges it, atomically.
func (s *StreamSource) Reject(ctx context.Context, id, reason string) error {
	m, ok := s.held[id]
	if !ok {
		return fmt.Errorf("learner: reject entry %s: not an entry this source delivered", id)
	}
	if err := s.consumer.DeadLetter(ctx, stream.DeadLetter{Message: m, Reason: reason}); err != nil {
		return err
	}
	delete(s.held, id)
	s.rejected++
	s.opts.Logger.Warn("learner: record set aside in the dead letters", "entry", id, "reason", reason)
	return nil
}

// Rejected counts entries sent to the dead letters.
func (s *StreamSource) Rejected() int64 { return s.rejected }

// Ensure the sources satisfy Source.
var (
	_ Source = (*FileSource)(nil)
	_ Source = (*StreamSource)(nil)
)
