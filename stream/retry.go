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
	backoff := 100 * time.Millisecond
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
		wait := min(backoff, giveUp.Sub(now))
		if r.OnRetry != nil {
			r.OnRetry(err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (stopped while retrying: %w)", err, ctx.Err())
		case <-t.C:
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
