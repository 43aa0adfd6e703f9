package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// ErrBackpressure is returned (wrapped) by a Producer in fail mode when a
// stream's unconsumed backlog is at its limit.
var ErrBackpressure = errors.New("redis: stream backlog at its limit")

// Field is one field of a stream entry.
type Field struct {
	Name  string
	Value []byte
}

// ProducerOptions tunes a Producer. The zero value blocks at 10000
// unconsumed entries, re-checking every 50 ms.
type ProducerOptions struct {
	// MaxBacklog is the most unconsumed entries a stream may hold before Add
	// waits (or fails). Unconsumed means not yet acknowledged by a consumer
	// group: delivered-but-pending plus not-yet-delivered. 0 means 10000;
	// negative disables backpressure. The producer never trims a stream.
	MaxBacklog int64
	// Fail makes Add return ErrBackpressure instead of waiting.
	Fail bool
	// Poll is how often a waiting Add re-checks the backlog; 0 means 50 ms.
	Poll time.Duration
	// Groups are the consumer groups whose backlog counts; the largest wins.
	// Empty means every group of the stream; a stream without groups counts
	// all its entries as unconsumed.
	Groups []string
	// RetryFor is how long AddGroup, AddGroups and AddGroupPayloads keep
	// retrying a batch that failed on a connection error (IsTransient: the
	// server down, restarting or loading its data), with backoff from 100 ms
	// to 2 s (Retry.For), before they return the error. The writes are idempotent per
	// group id, so a retry of a batch whose EXEC did happen writes nothing
	// again. 0 means no retry (go-redis's own few quick retries only).
	RetryFor time.Duration
	// OnRetry, when set, is called before each retry with the error and the
	// wait (for a log line). It must not block.
	OnRetry func(err error, wait time.Duration)
	// GroupFormat is how AddGroup and AddGroups encode a group: "" or
	// GroupFormatJSON (its JSON, which every reader takes) or
	// GroupFormatBinaryName (the binary group format, which the advantage
	// service and DecodeGroupEntry read; docs/redis.md). NewProducer refuses
	// another value.
	GroupFormat string
}

// Producer appends entries to streams, applying backpressure on their
// unconsumed backlog. It is safe for concurrent use.
type Producer struct {
	client goredis.UniversalClient
	opts   ProducerOptions

	mu sync.Mutex
	// estimate is an upper bound of each stream's backlog: the last measured
	// value plus what this producer has added since. The backlog is measured
	// again only when the estimate reaches the limit, so the common case
	// costs no extra round trip.
	estimate map[string]int64
}

// NewProducer returns a producer over client. It panics on a
// ProducerOptions.GroupFormat it does not know (check it with
// ValidGroupFormat first).
func NewProducer(client goredis.UniversalClient, opts ProducerOptions) *Producer {
	if err := ValidGroupFormat(opts.GroupFormat); err != nil {
		panic(err)
	}
	if opts.MaxBacklog == 0 {
		opts.MaxBacklog = 10000
	}
	if opts.Poll <= 0 {
		opts.Poll = 50 * time.Millisecond
	}
	return &Producer{client: client, opts: opts, estimate: map[string]int64{}}
}

// Add XADDs one entry to stream after waiting for room, and returns its id.
func (p *Producer) Add(ctx context.Context, stream string, fields ...Field) (string, error) {
	if err := p.wait(ctx, stream, 1); err != nil {
		return "", err
	}
	values := make([]any, 0, 2*len(fields))
	for _, f := range fields {
		values = append(values, f.Name, f.Value)
	}
	id, err := p.client.XAdd(ctx, &goredis.XAddArgs{Stream: stream, Values: values}).Result()
	if err != nil {
		return "", fmt.Errorf("redis: xadd %s: %w", stream, err)
	}
	return id, nil
}

// AddGroup writes g to the job's groups stream as one entry (fields group_id,
// policy_version, schema, and group: the JSON of traj.Group) unless a group
// with the same group_id was already written; it reports whether it wrote.
// The check and the write are one atomic transaction (gate.go), so a retried
// call never duplicates a group.
func (p *Producer) AddGroup(ctx context.Context, job string, g *traj.Group) (bool, error) {
	written, err := p.AddGroups(ctx, job, []*traj.Group{g})
	if err != nil {
		return false, err
	}
	return written[0], nil
}

// AddGroups is AddGroup for several groups in one round trip.
func (p *Producer) AddGroups(ctx context.Context, job string, groups []*traj.Group) ([]bool, error) {
	payloads := make([]GroupPayload, len(groups))
	for i, g := range groups {
		var data []byte
		var err error
		if p.opts.GroupFormat == GroupFormatBinaryName {
			data, err = wire.AppendGroupBinary(nil, g)
		} else {
			data, err = wire.EncodeGroup(g)
		}
		if err != nil {
			return nil, err
		}
		payloads[i] = GroupPayload{GroupID: g.GroupID, PolicyVersion: g.PolicyVersion, Schema: g.Schema, JSON: data}
	}
	return p.AddGroupPayloads(ctx, job, payloads)
}

// GroupPayload is a group already encoded as JSON (wire.EncodeGroup), with
// the identity fields the entry carries.
type GroupPayload struct {
	GroupID       string
	PolicyVersion int64
	// Schema is the group's schema version, for the entry's schema field;
	// empty means traj.TrajectorySchema.
	Schema string
	// JSON is the traj.Group, as JSON (wire.EncodeGroup) or in the binary
	// group format (wire.AppendGroupBinary: the entry then gets the format
	// field, GroupFormatBinary); the producer does not check that it matches
	// GroupID and PolicyVersion (the consumer does).
	JSON []byte
}

// ValidGroupFormat checks a ProducerOptions.GroupFormat value.
func ValidGroupFormat(format string) error {
	switch format {
	case "", GroupFormatJSON, GroupFormatBinaryName:
		return nil
	}
	return fmt.Errorf("group format %q, want %q or %q", format, GroupFormatJSON, GroupFormatBinaryName)
}

func (g GroupPayload) schema() string {
	if g.Schema == "" {
		return traj.TrajectorySchema
	}
	return g.Schema
}

// GroupFields are the fields of the groups-stream entry for g, for writers
// that XADD it themselves, e.g. through Consumer.Commit into keys.Groups with
// keys.GroupsWritten as the done set (the same set AddGroup checks).
func GroupFields(g GroupPayload) []Field {
	fields := []Field{
		{Name: FieldGroupID, Value: []byte(g.GroupID)},
		{Name: FieldPolicyVersion, Value: strconv.AppendInt(nil, g.PolicyVersion, 10)},
		{Name: FieldSchema, Value: []byte(g.schema())},
		{Name: FieldGroup, Value: g.JSON},
	}
	if wire.IsGroupBinary(g.JSON) {
		fields = append(fields, Field{Name: FieldFormat, Value: []byte(GroupFormatBinary)})
	}
	return fields
}

// AddGroupPayloads is AddGroups for groups already encoded, e.g. read from a
// file or encoded ahead of time: one transaction, idempotent per group id.
// A batch that fails on a connection error is retried for
// ProducerOptions.RetryFor.
func (p *Producer) AddGroupPayloads(ctx context.Context, job string, groups []GroupPayload) ([]bool, error) {
	var written []bool
	err := Retry{For: p.opts.RetryFor, OnRetry: p.opts.OnRetry}.Do(ctx, func() error {
		var err error
		written, err = p.addGroupPayloads(ctx, job, groups)
		return err
	})
	if err != nil {
		return nil, err
	}
	return written, nil
}

// IsTransient reports whether err is a connection error a retry may cure:
// the server refused or dropped the connection, a network timeout, or a
// reply that says it is loading its data or between masters (LOADING,
// MASTERDOWN, CLUSTERDOWN, TRYAGAIN). A closed client is not transient.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, goredis.ErrClosed) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var redisErr goredis.Error
	if errors.As(err, &redisErr) {
		msg := redisErr.Error()
		for _, prefix := range []string{"LOADING ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN "} {
			if strings.HasPrefix(msg, prefix) {
				return true
			}
		}
	}
	return false
}

func (p *Producer) addGroupPayloads(ctx context.Context, job string, groups []GroupPayload) ([]bool, error) {
	keys := JobKeys(job)
	if err := p.wait(ctx, keys.Groups, int64(len(groups))); err != nil {
		return nil, err
	}
	members := make([]string, len(groups))
	for i, g := range groups {
		members[i] = g.GroupID
	}
	written, err := gatedTx(ctx, p.client, keys.GroupsWritten, members, func(pipe goredis.Pipeliner, fresh []bool) {
		for i, g := range groups {
			if fresh[i] {
				values := []any{FieldGroupID, g.GroupID, FieldPolicyVersion, strconv.FormatInt(g.PolicyVersion, 10),
					FieldSchema, g.schema(), FieldGroup, g.JSON}
				if wire.IsGroupBinary(g.JSON) {
					values = append(values, FieldFormat, GroupFormatBinary)
				}
				pipe.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Groups, Values: values})
			}
		}
	})
	if err != nil {
		p.added(keys.Groups, -int64(len(groups))) // release the reservation
		return nil, fmt.Errorf("redis: add %d groups to %s: %w", len(groups), keys.Groups, err)
	}
	n := int64(0)
	for _, w := range written {
		if w {
			n++
		}
	}
	p.added(keys.Groups, n-int64(len(groups)))
	return written, nil
}

// wait reserves room for n entries in stream, blocking (or failing) while the
// backlog is at the limit.
func (p *Producer) wait(ctx context.Context, stream string, n int64) error {
	if p.opts.MaxBacklog < 0 {
		return nil
	}
	var ticker *time.Ticker
	for {
		p.mu.Lock()
		est, known := p.estimate[stream]
		if known && est+n <= p.opts.MaxBacklog {
			p.estimate[stream] = est + n
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
		backlog, err := Backlog(ctx, p.client, stream, p.opts.Groups, p.opts.MaxBacklog+1)
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.estimate[stream] = backlog
		if backlog+n <= p.opts.MaxBacklog || backlog == 0 {
			// An empty stream always takes a batch, even one above the limit.
			p.estimate[stream] = backlog + n
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
		if p.opts.Fail {
			return fmt.Errorf("%w: %s has %d unconsumed entries, limit %d", ErrBackpressure, stream, backlog, p.opts.MaxBacklog)
		}
		if ticker == nil {
			ticker = time.NewTicker(p.opts.Poll)
			defer ticker.Stop()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis: waiting for room in %s (%d unconsumed, limit %d): %w", stream, backlog, p.opts.MaxBacklog, ctx.Err())
		case <-ticker.C:
		}
	}
}

// added corrects the estimate by delta (negative when fewer entries were
// written than reserved).
func (p *Producer) added(stream string, delta int64) {
	if delta == 0 {
		return
	}
	p.mu.Lock()
	p.estimate[stream] = max(0, p.estimate[stream]+delta)
	p.mu.Unlock()
}

// Backlog returns the number of unconsumed entries of stream: for each
// consumer group (those named, or all), pending plus not yet delivered, and
// the largest over groups; all entries when the stream has no group. It counts
// at most limit undelivered entries when Redis cannot report a group's lag.
func Backlog(ctx context.Context, client goredis.UniversalClient, stream string, groups []string, limit int64) (int64, error) {
	worst, ok, err := GroupsBacklog(ctx, client, stream, groups, limit)
	if err != nil || ok {
		return worst, err
	}
	n, err := client.XLen(ctx, stream).Result()
	if err != nil {
		return 0, fmt.Errorf("redis: xlen %s: %w", stream, err)
	}
	return n, nil
}

// GroupsBacklog is Backlog over the stream's consumer groups only: ok is
// false when the stream has none (of those named), and then nothing is
// counted.
func GroupsBacklog(ctx context.Context, client goredis.UniversalClient, stream string, groups []string, limit int64) (backlog int64, ok bool, err error) {
	infos, err := client.XInfoGroups(ctx, stream).Result()
	if err != nil && !isNoSuchKey(err) {
		return 0, false, fmt.Errorf("redis: xinfo groups %s: %w", stream, err)
	}
	var worst int64 = -1
	for _, info := range infos {
		if len(groups) > 0 && !contains(groups, info.Name) {
			continue
		}
		lag := info.Lag
		if lag < 0 {
			// Redis cannot tell the lag (entries deleted mid-stream): count
			// what follows the last delivered id, up to limit.
			msgs, err := client.XRangeN(ctx, stream, "("+info.LastDeliveredID, "+", limit).Result()
			if err != nil {
				return 0, false, fmt.Errorf("redis: xrange %s after %s: %w", stream, info.LastDeliveredID, err)
			}
			lag = int64(len(msgs))
		}
		worst = max(worst, info.Pending+lag)
	}
	if worst < 0 {
		return 0, false, nil
	}
	return worst, true, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
