package prompt

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
)

// Distributed jobs: `toolrl rollout --redis URL --job J` enqueues the prompts
// file into the job's prompts stream (each entry with its iteration: the
// closed loop enqueues every prompt again per iteration); any number of
// `--worker` processes claim prompts through the consumer group "actors",
// write each group (job, prompt, iteration) once to the groups stream
// (idempotent) and acknowledge the prompt. A worker
// that dies leaves its prompts pending; another claims them after the idle
// timeout. A prompt whose group is already written is acknowledged without
// being redone, so a redelivery never duplicates a group. A worker exits
// when the stream is drained, unless it follows (RedisFeedOptions.Follow):
// the workers of a training run wait for the next iterations' entries. A
// prompt the runner refuses (longer than the model's context) is
// dead-lettered alone with the reason; the worker goes on. The key layout
// and the entries' fields are package stream's (stream.JobKeys,
// stream.FieldPrompt, stream.ActorsGroup).

// Enqueue adds prompts to job's prompts stream, each with its iteration and,
// when above 0, its MinPolicyVersion, skipping those already enqueued in that
// iteration. It returns how many it added. A prompt id must not contain '@'
// (see Prompt.Key).
func Enqueue(ctx context.Context, client goredis.UniversalClient, job string, prompts []Prompt) (int, error) {
	if err := stream.ValidateJob(job); err != nil {
		return 0, err
	}
	keys := stream.JobKeys(job)
	added := 0
	for _, p := range prompts {
		if err := p.CheckIdentity(); err != nil {
			return added, fmt.Errorf("enqueue prompt: %w", err)
		}
		if p.MinPolicyVersion < 0 {
			return added, fmt.Errorf("enqueue prompt %s: min policy version %d, want ≥ 0", p.Key(), p.MinPolicyVersion)
		}
		data, err := json.Marshal(p)
		if err != nil {
			return added, fmt.Errorf("encode prompt %s: %w", p.Key(), err)
		}
		fresh, err := client.SAdd(ctx, keys.Queued, p.Key()).Result()
		if err != nil {
			return added, fmt.Errorf("enqueue prompt %s: %w", p.Key(), err)
		}
		if fresh == 0 {
			continue
		}
		values := []any{stream.FieldPrompt, data, stream.FieldIteration, strconv.Itoa(p.Iteration)}
		if p.MinPolicyVersion > 0 {
			values = append(values, stream.FieldMinPolicyVersion, strconv.FormatInt(p.MinPolicyVersion, 10))
		}
		if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Prompts, Values: values}).Err(); err != nil {
			// Undo the mark so a retry enqueues it.
			client.SRem(ctx, keys.Queued, p.Key())
			return added, fmt.Errorf("enqueue prompt %s: %w", p.Key(), err)
		}
		added++
	}
	return added, nil
}

// entryIteration reads an entry's iteration field: absent is 0.
func entryIteration(m stream.Message) (int, error) {
	v, ok := m.Values[stream.FieldIteration]
	if !ok {
		return 0, nil
	}
	s, _ := v.(string)
	k, err := strconv.Atoi(s)
	if err != nil || k < 0 {
		return 0, fmt.Errorf("field %s is %q, want a decimal ≥ 0", stream.FieldIteration, s)
	}
	return k, nil
}

// entryMinPolicyVersion reads an entry's min_policy_version field: absent is 0.
func entryMinPolicyVersion(m stream.Message) (int64, error) {
	v, ok := m.Values[stream.FieldMinPolicyVersion]
	if !ok {
		return 0, nil
	}
	s, _ := v.(string)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("field %s is %q, want a decimal ≥ 0", stream.FieldMinPolicyVersion, s)
	}
	return n, nil
}

// RedisFeedOptions configures a worker's feed.
type RedisFeedOptions struct {
	Job string
	// Consumer names this worker in the group (default host-pid).
	Consumer string
	// ClaimIdle is how long a prompt may stay with a silent worker before
	// another claims it (default 60 s); it must exceed a group's rollout time.
	ClaimIdle time.Duration
	// Poll is the least time between non-blocking reads while groups are in
	// flight, and between reads of an idle Follow worker (default 200 ms).
	Poll time.Duration
	// Follow keeps the feed open when the stream is drained: Next waits for
	// new entries (the next iterations of a training run) until its ctx is
	// cancelled, instead of reporting the feed exhausted.
	Follow bool
	// Retry rides out a Redis outage: every read, check, ack and dead letter
	// of the feed that fails on a connection error is retried with backoff
	// for Retry.For, then Next, Done or Refuse returns the error. A worker
	// takes Retry.For from its URL's retry= option (stream.WriteRetry), as
	// its sink does. The zero value does not retry; a nil Retry.OnRetry
	// logs each retry (slog's default logger).
	Retry stream.Retry
}

// FeedStats counts what a worker's feed did with the prompts-stream entries
// delivered to it.
type FeedStats struct {
	// Claimed counts the entries delivered to this worker: read new, or
	// reclaimed.
	Claimed int
	// Reclaimed counts those of Claimed that another worker held past
	// ClaimIdle (delivered before).
	Reclaimed int
	// Done counts the prompts acknowledged once their group was written (or
	// found written by another worker meanwhile).
	Done int
	// Redone counts entries whose group was already written when they came:
	// acknowledged without being sampled.
	Redone int
	// Repeats counts entries of a prompt already in flight here (claimed
	// back, or enqueued twice): acknowledged with the first.
	Repeats int
	// Corrupt counts entries that did not decode: dead-lettered.
	Corrupt int
	// Refused counts prompts the runner refused (longer than the model's
	// context): dead-lettered with the reason.
	Refused int
	// OverDelivered counts entries dead-lettered when claimed because they
	// were delivered more than the delivery limit (stream.ConsumerOptions.MaxDeliveries).
	OverDelivered int
}

// Write prints the stats as the summary's worker line.
func (s FeedStats) Write(w io.Writer) {
	fmt.Fprintf(w, "  worker         %d prompt entries claimed (%d reclaimed from idle workers); %d done, %d already written by others, %d repeats; dead-lettered: %d refused, %d corrupt, %d over the delivery limit\n",
		s.Claimed, s.Reclaimed, s.Done, s.Redone, s.Repeats, s.Refused, s.Corrupt, s.OverDelivered)
}

// RedisFeed is the Feed of a distributed worker. It is not safe for
// concurrent use (one runner owns it).
type RedisFeed struct {
	client   goredis.UniversalClient
	consumer *stream.Consumer
	keys     stream.Keys
	opts     RedisFeedOptions
	buf      []stream.Message
	// entries maps Prompt.Key to the entries delivered for it (the one being
	// rolled out first), until Done acknowledges them all (or Refuse
	// dead-letters them).
	entries  map[string][]stream.Message
	lastRead time.Time
	stats    FeedStats
}

// NewRedisFeed joins the actors group of job's prompts stream.
func NewRedisFeed(ctx context.Context, client goredis.UniversalClient, opts RedisFeedOptions) (*RedisFeed, error) {
	if opts.Consumer == "" {
		host, _ := os.Hostname()
		opts.Consumer = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if opts.ClaimIdle <= 0 {
		opts.ClaimIdle = 60 * time.Second
	}
	if opts.Poll <= 0 {
		opts.Poll = 200 * time.Millisecond
	}
	keys := stream.JobKeys(opts.Job)
	if opts.Retry.OnRetry == nil {
		opts.Retry.OnRetry = func(err error, wait time.Duration) {
			slog.Warn("redis feed: a read failed, retrying", "stream", keys.Prompts, "err", err, "wait", wait, "retry_for", opts.Retry.For)
		}
	}
	c, err := stream.NewConsumer(client, stream.ConsumerOptions{
		Stream: keys.Prompts, Group: stream.ActorsGroup, Consumer: opts.Consumer, DeadLetter: keys.Dead,
		Count: 16, Block: 20 * time.Millisecond, ClaimIdle: opts.ClaimIdle,
	})
	if err != nil {
		return nil, err
	}
	f := &RedisFeed{client: client, consumer: c, keys: keys, opts: opts, entries: map[string][]stream.Message{}}
	if err := f.retry(ctx, c.EnsureGroup); err != nil {
		return nil, err
	}
	return f, nil
}

// Stats returns what the feed did so far.
func (f *RedisFeed) Stats() FeedStats {
	s := f.stats
	s.OverDelivered = int(f.consumer.OverDelivered())
	return s
}

// retry runs one Redis operation under opts.Retry. Every operation of the
// feed may run again after a failure whose effect is unknown: an ack is
// idempotent; a read whose reply was lost leaves its entries pending here,
// and they are claimed back after ClaimIdle like a dead worker's; a dead
// letter whose reply was lost may be written twice (the prompt is acked once).
func (f *RedisFeed) retry(ctx context.Context, op func(context.Context) error) error {
	return f.opts.Retry.Do(ctx, func() error { return op(ctx) })
}

// Next returns the next prompt. With block it waits until one comes or the
// stream is drained: nothing undelivered and nothing pending anywhere (with
// Follow, until one comes or ctx is done).
func (f *RedisFeed) Next(ctx context.Context, block bool) (Prompt, bool, error) {
	for {
		if p, ok, err := f.pop(ctx); err != nil || ok {
			return p, ok, err
		}
		if !block && time.Since(f.lastRead) < f.opts.Poll {
			return Prompt{}, false, nil
		}
		f.lastRead = time.Now()
		var msgs []stream.Message
		err := f.retry(ctx, func(ctx context.Context) error {
			var err error
			msgs, err = f.consumer.Read(ctx)
			return err
		})
		if err != nil {
			return Prompt{}, false, err
		}
		for _, m := range msgs {
			f.stats.Claimed++
			if m.Deliveries > 1 {
				f.stats.Reclaimed++
			}
		}
		f.buf = append(f.buf, msgs...)
		if len(msgs) > 0 {
			continue
		}
		if !block {
			return Prompt{}, false, nil
		}
		if f.opts.Follow {
			// Idle: read again after Poll (Read itself blocks only briefly,
			// so that non-blocking reads never stall decoding).
			t := time.NewTimer(f.opts.Poll)
			select {
			case <-ctx.Done():
				t.Stop()
				return Prompt{}, false, ctx.Err()
			case <-t.C:
			}
			continue
		}
		drained, err := f.drained(ctx)
		if err != nil {
			return Prompt{}, false, err
		}
		if drained {
			return Prompt{}, false, nil
		}
		if err := ctx.Err(); err != nil {
			return Prompt{}, false, err
		}
	}
}

// pop decodes buffered entries, dead-lettering the corrupt ones and acking
// those whose group is already written.
func (f *RedisFeed) pop(ctx context.Context) (Prompt, bool, error) {
	for len(f.buf) > 0 {
		m := f.buf[0]
		raw, _ := m.Values[stream.FieldPrompt].(string)
		p, err := parse([]byte(raw))
		if err == nil {
			p.Iteration, err = entryIteration(m)
		}
		if err == nil {
			p.MinPolicyVersion, err = entryMinPolicyVersion(m)
		}
		if err != nil {
			letter := stream.DeadLetter{Message: m, Reason: "decode prompt: " + err.Error()}
			if derr := f.retry(ctx, func(ctx context.Context) error { return f.consumer.DeadLetter(ctx, letter) }); derr != nil {
				return Prompt{}, false, derr
			}
			f.buf = f.buf[1:]
			f.stats.Corrupt++
			continue
		}
		var written bool
		err = f.retry(ctx, func(ctx context.Context) error {
			var err error
			written, err = f.client.SIsMember(ctx, f.keys.GroupsWritten, traj.GroupID(f.opts.Job, p.ID, p.Iteration)).Result()
			return err
		})
		if err != nil {
			return Prompt{}, false, fmt.Errorf("check group of prompt %s: %w", p.Key(), err)
		}
		if written {
			if err := f.retry(ctx, func(ctx context.Context) error { return f.consumer.Ack(ctx, m.ID) }); err != nil {
				return Prompt{}, false, err
			}
			f.buf = f.buf[1:]
			f.stats.Redone++
			continue
		}
		// The entry leaves the buffer only once handled, so an error above
		// (the retries spent) leaves it there for the next call.
		f.buf = f.buf[1:]
		if held, dup := f.entries[p.Key()]; dup {
			// Claimed back while still in flight here, or another entry of
			// the same prompt and iteration (one enqueued around the queued
			// set): the first delivery's Done acks it too; drop it here.
			if !slices.ContainsFunc(held, func(h stream.Message) bool { return h.ID == m.ID }) {
				f.entries[p.Key()] = append(held, m)
			}
			f.stats.Repeats++
			continue
		}
		f.entries[p.Key()] = []stream.Message{m}
		return p, true, nil
	}
	return Prompt{}, false, nil
}

func (f *RedisFeed) drained(ctx context.Context) (bool, error) {
	var lag, pending int64
	err := f.retry(ctx, func(ctx context.Context) error {
		var err error
		if lag, err = f.consumer.Lag(ctx); err != nil {
			return err
		}
		pending, err = f.consumer.Pending(ctx)
		return err
	})
	if err != nil {
		return false, err
	}
	return lag == 0 && pending == 0, nil
}

// Done acknowledges the prompt once its group is written.
func (f *RedisFeed) Done(ctx context.Context, p Prompt) error {
	held, ok := f.entries[p.Key()]
	if !ok {
		return nil
	}
	ids := make([]string, len(held))
	for i, m := range held {
		ids[i] = m.ID
	}
	if err := f.retry(ctx, func(ctx context.Context) error { return f.consumer.Ack(ctx, ids...) }); err != nil {
		return err
	}
	delete(f.entries, p.Key())
	f.stats.Done++
	return nil
}

// Refuse dead-letters the entries of a prompt the runner cannot sample, with
// reason in the dead letters' reason field (stream.FieldReason); that
// acknowledges them, so no worker gets the prompt again. The other prompts
// of the batch are untouched.
func (f *RedisFeed) Refuse(ctx context.Context, p Prompt, reason string) error {
	held, ok := f.entries[p.Key()]
	if !ok {
		return nil
	}
	letters := make([]stream.DeadLetter, len(held))
	for i, m := range held {
		letters[i] = stream.DeadLetter{Message: m, Reason: reason}
	}
	if err := f.retry(ctx, func(ctx context.Context) error { return f.consumer.DeadLetter(ctx, letters...) }); err != nil {
		return fmt.Errorf("dead-letter refused prompt %s: %w", p.Key(), err)
	}
	delete(f.entries, p.Key())
	f.stats.Refused++
	return nil
}
