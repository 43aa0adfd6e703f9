package stream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Message is one stream entry delivered to a consumer.
type Message struct {
	// ID is the entry id (e.g. "1700000000000-0").
	ID string
	// Values are the entry's fields; values are strings.
	Values map[string]any
	// Deliveries is how many times the entry has been delivered, this time
	// included (1 for a first delivery).
	Deliveries int64
}

// ConsumerOptions configures a Consumer. Stream, Group and Consumer are
// required; the rest have the documented defaults.
type ConsumerOptions struct {
	Stream   string
	Group    string
	Consumer string
	// DeadLetter is the stream that DeadLetter writes to; required for
	// DeadLetter and for MaxDeliveries.
	DeadLetter string
	// Count is the most entries one Read returns; 0 means 64.
	Count int64
	// Block is how long one Read waits for new entries; 0 means 1 s.
	Block time.Duration
	// ClaimIdle is how long an entry stays pending with a consumer before
	// another may claim it (XAUTOCLAIM); 0 means 30 s. It must exceed the
	// time processing one batch takes.
	ClaimIdle time.Duration
	// MaxDeliveries: an entry claimed after this many deliveries goes to the
	// dead letters instead of being processed again (a poison entry that
	// crashes its consumer); 0 means 5, negative means never.
	MaxDeliveries int64
	// StartID is where a group created by EnsureGroup starts reading; "" means
	// "0" (the whole stream).
	StartID string
}

// Consumer reads one stream as one member of a consumer group. Read
// reclaims entries other consumers left pending past ClaimIdle before it
// reads new ones. A Consumer is safe for concurrent use, but one goroutine
// per Consumer (each with its own name) is the intended pattern.
type Consumer struct {
	client goredis.UniversalClient
	opts   ConsumerOptions

	mu          sync.Mutex
	claimCursor string
	nextClaim   time.Time
	// overDelivered counts the entries claim dead-lettered for MaxDeliveries.
	overDelivered int64
}

// NewConsumer checks opts and returns a consumer; it does not touch Redis.
func NewConsumer(client goredis.UniversalClient, opts ConsumerOptions) (*Consumer, error) {
	if opts.Stream == "" || opts.Group == "" || opts.Consumer == "" {
		return nil, fmt.Errorf("redis consumer: stream %q, group %q and consumer %q are all required", opts.Stream, opts.Group, opts.Consumer)
	}
	if opts.Count <= 0 {
		opts.Count = 64
	}
	if opts.Block <= 0 {
		opts.Block = time.Second
	}
	if opts.ClaimIdle <= 0 {
		opts.ClaimIdle = 30 * time.Second
	}
	if opts.MaxDeliveries == 0 {
		opts.MaxDeliveries = 5
	}
	if opts.StartID == "" {
		opts.StartID = "0"
	}
	return &Consumer{client: client, opts: opts, claimCursor: "0-0"}, nil
}

// OverDelivered returns how many entries Read has dead-lettered because they
// were delivered more than MaxDeliveries times.
func (c *Consumer) OverDelivered() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.overDelivered
}

// Options returns the consumer's options with defaults filled in.
func (c *Consumer) Options() ConsumerOptions { return c.opts }

// EnsureGroup creates the consumer group (and the stream) if missing.
func (c *Consumer) EnsureGroup(ctx context.Context) error {
	err := c.client.XGroupCreateMkStream(ctx, c.opts.Stream, c.opts.Group, c.opts.StartID).Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("redis: create group %s on %s: %w", c.opts.Group, c.opts.Stream, err)
	}
	return nil
}

// Read returns the next batch: entries idle past ClaimIdle in other
// consumers' pending lists (checked every ClaimIdle/2), else new entries,
// waiting up to Block. An empty batch with a nil error means nothing came.
// Claimed entries delivered more than MaxDeliveries times are dead-lettered
// here and not returned. A missing group (e.g. after a server lost its data)
// is re-created.
func (c *Consumer) Read(ctx context.Context) ([]Message, error) {
	claimed, err := c.claim(ctx)
	if err != nil || len(claimed) > 0 {
		return claimed, err
	}
	streams, err := c.client.XReadGroup(ctx, &goredis.XReadGroupArgs{
		Group: c.opts.Group, Consumer: c.opts.Consumer, Streams: []string{c.opts.Stream, ">"},
		Count: c.opts.Count, Block: c.opts.Block,
	}).Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		if isNoGroup(err) {
			if gerr := c.EnsureGroup(ctx); gerr != nil {
				return nil, gerr
			}
			return nil, nil
		}
		return nil, fmt.Errorf("redis: xreadgroup %s group %s: %w", c.opts.Stream, c.opts.Group, err)
	}
	var out []Message
	for _, s := range streams {
		for _, m := range s.Messages {
			out = append(out, Message{ID: m.ID, Values: m.Values, Deliveries: 1})
		}
	}
	return out, nil
}

// claim runs one XAUTOCLAIM step when it is due.
func (c *Consumer) claim(ctx context.Context) ([]Message, error) {
	c.mu.Lock()
	now := time.Now()
	if now.Before(c.nextClaim) {
		c.mu.Unlock()
		return nil, nil
	}
	cursor := c.claimCursor
	c.mu.Unlock()

	msgs, next, err := c.client.XAutoClaim(ctx, &goredis.XAutoClaimArgs{
		Stream: c.opts.Stream, Group: c.opts.Group, Consumer: c.opts.Consumer,
		MinIdle: c.opts.ClaimIdle, Start: cursor, Count: c.opts.Count,
	}).Result()
	if err != nil {
		if isNoGroup(err) {
			return nil, c.EnsureGroup(ctx)
		}
		return nil, fmt.Errorf("redis: xautoclaim %s group %s: %w", c.opts.Stream, c.opts.Group, err)
	}
	c.mu.Lock()
	c.claimCursor = next
	if next == "0-0" || next == "" {
		// A full pass is done: wait before scanning the pending list again.
		c.claimCursor = "0-0"
		c.nextClaim = now.Add(c.opts.ClaimIdle / 2)
	}
	c.mu.Unlock()
	if len(msgs) == 0 {
		return nil, nil
	}

	counts, err := c.deliveries(ctx, msgs[0].ID, msgs[len(msgs)-1].ID, int64(len(msgs)))
	if err != nil {
		return nil, err
	}
	out := make([]Message, 0, len(msgs))
	var poison []DeadLetter
	for _, m := range msgs {
		msg := Message{ID: m.ID, Values: m.Values, Deliveries: counts[m.ID]}
		if c.opts.MaxDeliveries > 0 && msg.Deliveries > c.opts.MaxDeliveries && c.opts.DeadLetter != "" {
			poison = append(poison, DeadLetter{Message: msg,
				Reason: fmt.Sprintf("delivered %d times without being acknowledged (limit %d)", msg.Deliveries, c.opts.MaxDeliveries)})
			continue
		}
		out = append(out, msg)
	}
	if len(poison) > 0 {
		if err := c.DeadLetter(ctx, poison...); err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.overDelivered += int64(len(poison))
		c.mu.Unlock()
	}
	return out, nil
}

// deliveries returns the delivery counts of this consumer's pending entries
// in [start, end].
func (c *Consumer) deliveries(ctx context.Context, start, end string, n int64) (map[string]int64, error) {
	pend, err := c.client.XPendingExt(ctx, &goredis.XPendingExtArgs{
		Stream: c.opts.Stream, Group: c.opts.Group, Start: start, End: end, Count: n, Consumer: c.opts.Consumer,
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: xpending %s group %s: %w", c.opts.Stream, c.opts.Group, err)
	}
	counts := make(map[string]int64, len(pend))
	for _, p := range pend {
		counts[p.ID] = p.RetryCount
	}
	return counts, nil
}

// Ack acknowledges entries (XACK) without writing anything.
func (c *Consumer) Ack(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := c.client.XAck(ctx, c.opts.Stream, c.opts.Group, ids...).Err(); err != nil {
		return fmt.Errorf("redis: xack %d entries of %s: %w", len(ids), c.opts.Stream, err)
	}
	return nil
}

// DeadLetter is an entry that cannot be processed and why.
type DeadLetter struct {
	Message Message
	Reason  string
}

// DeadLetter appends each entry to the dead-letter stream (fields reason,
// source_stream, source_id, source_group, consumer, deliveries, then the
// entry's own fields as "field:<name>") and acknowledges it, atomically.
func (c *Consumer) DeadLetter(ctx context.Context, letters ...DeadLetter) error {
	if len(letters) == 0 {
		return nil
	}
	if c.opts.DeadLetter == "" {
		return fmt.Errorf("redis: dead letter from %s: no dead-letter stream configured", c.opts.Stream)
	}
	args := []any{c.opts.Group}
	for _, d := range letters {
		fields := []any{
			FieldReason, d.Reason, FieldSourceStream, c.opts.Stream, FieldSourceID, d.Message.ID,
			FieldSourceGroup, c.opts.Group, FieldConsumer, c.opts.Consumer,
			FieldDeliveries, strconv.FormatInt(d.Message.Deliveries, 10),
		}
		for k, v := range d.Message.Values {
			fields = append(fields, "field:"+k, v)
		}
		args = append(args, d.Message.ID, len(fields)/2)
		args = append(args, fields...)
	}
	err := deadLetterScript.Run(ctx, c.client, []string{c.opts.Stream, c.opts.DeadLetter}, args...).Err()
	if err != nil {
		return fmt.Errorf("redis: dead-letter %d entries of %s to %s: %w", len(letters), c.opts.Stream, c.opts.DeadLetter, err)
	}
	return nil
}

// Output is what processing one consumed entry produced.
type Output struct {
	// ID is the consumed entry to acknowledge.
	ID string
	// Done names the unit of work in the done set (e.g. the group id): if it
	// is already there, Entries are not written again.
	Done string
	// Entries are appended to the output stream, in order.
	Entries [][]Field
}

// Commit writes the outputs of consumed entries to outStream, adds each
// Output.Done to the doneSet and acknowledges each entry, atomically (one
// MULTI/EXEC transaction gated by WATCH, see gate.go). Outputs whose Done was
// already in the set (a redelivery of work already committed, e.g. after a
// claim raced a slow consumer), or repeats an earlier output's Done, write
// nothing and are only acknowledged. It reports, per output, whether it was
// written. In a cluster the stream, doneSet and outStream must share a hash
// slot, and doneSet must carry the hash tag (JobKeys does both).
func (c *Consumer) Commit(ctx context.Context, doneSet, outStream string, outputs []Output) ([]bool, error) {
	if len(outputs) == 0 {
		return nil, nil
	}
	members := make([]string, len(outputs))
	ids := make([]string, len(outputs))
	for i, o := range outputs {
		if o.Done == "" {
			return nil, fmt.Errorf("redis: commit entry %s of %s: empty done member", o.ID, c.opts.Stream)
		}
		members[i], ids[i] = o.Done, o.ID
	}
	written, err := gatedTx(ctx, c.client, doneSet, members, func(pipe goredis.Pipeliner, fresh []bool) {
		for i, o := range outputs {
			if !fresh[i] {
				continue
			}
			for _, e := range o.Entries {
				values := make([]any, 0, 2*len(e))
				for _, f := range e {
					values = append(values, f.Name, f.Value)
				}
				pipe.XAdd(ctx, &goredis.XAddArgs{Stream: outStream, Values: values})
			}
		}
		pipe.XAck(ctx, c.opts.Stream, c.opts.Group, ids...)
	})
	if err != nil {
		return nil, fmt.Errorf("redis: commit %d entries of %s to %s: %w", len(outputs), c.opts.Stream, outStream, err)
	}
	return written, nil
}

// PruneIdleConsumers deletes the group's consumers that have no pending
// entries and have been idle at least minIdle (e.g. those of replicas that
// were restarted under new names), atomically, and returns how many it
// deleted. It never deletes a consumer that holds pending entries.
func (c *Consumer) PruneIdleConsumers(ctx context.Context, minIdle time.Duration) (int64, error) {
	n, err := pruneConsumersScript.Run(ctx, c.client, []string{c.opts.Stream}, c.opts.Group, minIdle.Milliseconds()).Int64()
	if err != nil {
		return 0, fmt.Errorf("redis: prune idle consumers of %s group %s: %w", c.opts.Stream, c.opts.Group, err)
	}
	return n, nil
}

// Pending returns the number of entries delivered to the group and not yet
// acknowledged.
func (c *Consumer) Pending(ctx context.Context) (int64, error) {
	p, err := c.client.XPending(ctx, c.opts.Stream, c.opts.Group).Result()
	if err != nil {
		return 0, fmt.Errorf("redis: xpending %s group %s: %w", c.opts.Stream, c.opts.Group, err)
	}
	return p.Count, nil
}

// Lag returns the number of entries not yet delivered to the group (-1 when
// Redis cannot tell).
func (c *Consumer) Lag(ctx context.Context) (int64, error) {
	infos, err := c.client.XInfoGroups(ctx, c.opts.Stream).Result()
	if err != nil {
		return 0, fmt.Errorf("redis: xinfo groups %s: %w", c.opts.Stream, err)
	}
	for _, info := range infos {
		if info.Name == c.opts.Group {
			return info.Lag, nil
		}
	}
	return 0, fmt.Errorf("redis: stream %s has no group %s", c.opts.Stream, c.opts.Group)
}

func isNoGroup(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOGROUP")
}

func isNoSuchKey(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such key")
}
