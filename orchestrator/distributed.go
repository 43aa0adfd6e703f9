package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
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
// the workers of a training run wait for the next iterations' entries.

// ActorsGroup is the consumer group of rollout workers on the prompts stream.
const ActorsGroup = "actors"

// Fields of a prompts-stream entry (toolrl:{job}:prompts).
const (
	// FieldPrompt holds one prompt's JSON (a prompts-file line).
	FieldPrompt = "prompt"
	// FieldIteration holds the iteration the prompt is to be sampled in
	// (Prompt.Iteration), a decimal ≥ 0. An entry without it (written
	// before iterations existed) is iteration 0.
	FieldIteration = "iteration"
	// FieldMinPolicyVersion holds the least policy version the prompt may
	// be sampled with (Prompt.MinPolicyVersion), a decimal ≥ 0; absent is 0.
	// Enqueue writes it only when it is above 0.
	FieldMinPolicyVersion = "min_policy_version"
)

// queuedKey is the set of prompts already enqueued, by Prompt.Key (id in
// iteration 0, id@k in iteration k), so enqueueing a prompt twice in one
// iteration adds nothing and every iteration enqueues it anew.
func queuedKey(k stream.Keys) string { return k.Prompts + ":queued" }

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
		if err := p.checkIdentity(); err != nil {
			return added, fmt.Errorf("enqueue prompt: %w", err)
		}
		if p.MinPolicyVersion < 0 {
			return added, fmt.Errorf("enqueue prompt %s: min policy version %d, want ≥ 0", p.Key(), p.MinPolicyVersion)
		}
		data, err := json.Marshal(p)
		if err != nil {
			return added, fmt.Errorf("encode prompt %s: %w", p.Key(), err)
		}
		fresh, err := client.SAdd(ctx, queuedKey(keys), p.Key()).Result()
		if err != nil {
			return added, fmt.Errorf("enqueue prompt %s: %w", p.Key(), err)
		}
		if fresh == 0 {
			continue
		}
		values := []any{FieldPrompt, data, FieldIteration, strconv.Itoa(p.Iteration)}
		if p.MinPolicyVersion > 0 {
			values = append(values, FieldMinPolicyVersion, strconv.FormatInt(p.MinPolicyVersion, 10))
		}
		if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Prompts, Values: values}).Err(); err != nil {
			// Undo the mark so a retry enqueues it.
			client.SRem(ctx, queuedKey(keys), p.Key())
			return added, fmt.Errorf("enqueue prompt %s: %w", p.Key(), err)
		}
		added++
	}
	return added, nil
}

// entryIteration reads an entry's iteration field: absent is 0.
func entryIteration(m stream.Message) (int, error) {
	v, ok := m.Values[FieldIteration]
	if !ok {
		return 0, nil
	}
	s, _ := v.(string)
	k, err := strconv.Atoi(s)
	if err != nil || k < 0 {
		return 0, fmt.Errorf("field %s is %q, want a decimal ≥ 0", FieldIteration, s)
	}
	return k, nil
}

// entryMinPolicyVersion reads an entry's min_policy_version field: absent is 0.
func entryMinPolicyVersion(m stream.Message) (int64, error) {
	v, ok := m.Values[FieldMinPolicyVersion]
	if !ok {
		return 0, nil
	}
	s, _ := v.(string)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("field %s is %q, want a decimal ≥ 0", FieldMinPolicyVersion, s)
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
}

// RedisFeed is the PromptFeed of a distributed worker.
type RedisFeed struct {
	client   goredis.UniversalClient
	consumer *stream.Consumer
	keys     stream.Keys
	opts     RedisFeedOptions
	buf      []stream.Message
	// ids maps Prompt.Key to the entries delivered for it (the one being
	// rolled out first), until Done acknowledges them all.
	ids      map[string][]string
	lastRead time.Time
	// DeadLetters counts prompt entries that could not be decoded.
	DeadLetters int
	// Redone counts entries whose group was already written (acked, skipped).
	Redone int
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
	c, err := stream.NewConsumer(client, stream.ConsumerOptions{
		Stream: keys.Prompts, Group: ActorsGroup, Consumer: opts.Consumer, DeadLetter: keys.Dead,
		Count: 16, Block: 20 * time.Millisecond, ClaimIdle: opts.ClaimIdle,
	})
	if err != nil {
		return nil, err
	}
	if err := c.EnsureGroup(ctx); err != nil {
		return nil, err
	}
	return &RedisFeed{client: client, consumer: c, keys: keys, opts: opts, ids: map[string][]string{}}, nil
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
		msgs, err := f.consumer.Read(ctx)
		if err != nil {
			return Prompt{}, false, err
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
		f.buf = f.buf[1:]
		raw, _ := m.Values[FieldPrompt].(string)
		p, err := parsePrompt([]byte(raw))
		if err == nil {
			p.Iteration, err = entryIteration(m)
		}
		if err == nil {
			p.MinPolicyVersion, err = entryMinPolicyVersion(m)
		}
		if err != nil {
			f.DeadLetters++
			if derr := f.consumer.DeadLetter(ctx, stream.DeadLetter{Message: m, Reason: "decode prompt: " + err.Error()}); derr != nil {
				return Prompt{}, false, derr
			}
			continue
		}
		written, err := f.client.SIsMember(ctx, f.keys.GroupsWritten, traj.GroupID(f.opts.Job, p.ID, p.Iteration)).Result()
		if err != nil {
			return Prompt{}, false, fmt.Errorf("check group of prompt %s: %w", p.Key(), err)
		}
		if written {
			f.Redone++
			if err := f.consumer.Ack(ctx, m.ID); err != nil {
				return Prompt{}, false, err
			}
			continue
		}
		if entries, dup := f.ids[p.Key()]; dup {
			// Claimed back while still in flight here, or another entry of
			// the same prompt and iteration (one enqueued around the queued
			// set): the first delivery's Done acks it too; drop it here.
			if !slices.Contains(entries, m.ID) {
				f.ids[p.Key()] = append(entries, m.ID)
			}
			continue
		}
		f.ids[p.Key()] = []string{m.ID}
		return p, true, nil
	}
	return Prompt{}, false, nil
}

func (f *RedisFeed) drained(ctx context.Context) (bool, error) {
	lag, err := f.consumer.Lag(ctx)
	if err != nil {
		return false, err
	}
	pending, err := f.consumer.Pending(ctx)
	if err != nil {
		return false, err
	}
	return lag == 0 && pending == 0, nil
}

// Done acknowledges the prompt once its group is written.
func (f *RedisFeed) Done(ctx context.Context, p Prompt) error {
	entries, ok := f.ids[p.Key()]
	if !ok {
		return nil
	}
	delete(f.ids, p.Key())
	return f.consumer.Ack(ctx, entries...)
}
