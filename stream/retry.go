package stream

import (
	"context"
	"fmt"
	"time"
)

// Retry is how a caller rides out a Redis outage (the server restarting,
// loading its data, a failover): an operation that fails on a transient
// connection error (IsTransient) is run again with backoff from 100 ms to
// 2 s until it succeeds, fails otherwise, ctx is done or For has passed since
// the first failure. The producer (ProducerOptions.RetryFor) and the rollout
// workers' prompt feed both retry through it, for the URL's retry= option
// (WriteRetry). The zero value does not retry.
type Retry struct {
	// For bounds the retrying, from the first failure; 0 means no retry
	// (go-redis's own few quick retries only).
	For time.Duration
	// OnRetry, when set, is called before each retry with the error and the
	// wait (for a log line). It must not block.
	OnRetry func(err error, wait time.Duration)
}

// Do runs op, retrying it as Retry says. op must be safe to run again after
// a failure whose effect is unknown (idempotent). The error of the last
// attempt is returned, marked "gave up after retrying for <For>" when the
// time ran out, or "stopped while retrying" when ctx ended the wait.
func (r Retry) Do(ctx context.Context, op func() error) error {
	var giveUp time.Time
	var backoff Backoff
	for {
		err := op()
		if err == nil || r.For <= 0 || !IsTransient(err) || ctx.Err() != nil {
			return err
		}
		now := time.Now()
		if giveUp.IsZero() {
			giveUp = now.Add(r.For)
		}
		if !now.Before(giveUp) {
			return fmt.Errorf("%w (gave up after retrying for %s)", err, r.For)
		}
		wait := min(backoff.Next(), giveUp.Sub(now))
		if r.OnRetry != nil {
			r.OnRetry(err, wait)
		}
		if !sleep(ctx, wait) {
			return fmt.Errorf("%w (stopped while retrying: %w)", err, ctx.Err())
		}
	}
}

// Backoff is toolrl's one retry schedule: waits of 100 ms, doubling to at
// most 2 s. Retry.Do waits by it; the advantage service's workers, which
// ride out an outage for as long as it lasts (their health says so), wait
// by it between failed batches. The zero value starts at 100 ms.
type Backoff struct{ next time.Duration }

// The schedule's first and longest waits.
const (
	backoffFirst = 100 * time.Millisecond
	backoffMax   = 2 * time.Second
)

// Next returns the wait before the next attempt and doubles the one after.
func (b *Backoff) Next() time.Duration {
	if b.next == 0 {
		b.next = backoffFirst
	}
	d := b.next
	b.next = min(2*b.next, backoffMax)
	return d
}

// Reset starts the schedule again (after a success).
func (b *Backoff) Reset() { b.next = 0 }

// Wait sleeps Next() unless ctx ends first; it reports whether it slept
// the whole wait.
func (b *Backoff) Wait(ctx context.Context) bool { return sleep(ctx, b.Next()) }

// sleep waits d unless ctx ends first; it reports whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
