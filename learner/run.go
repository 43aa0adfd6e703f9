package learner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/traj"
)

// RunOptions configure Run.
type RunOptions struct {
	// Store receives the published versions; Base supplies their config
	// and tokenizer files.
	Store *policystore.Store
	Base  Base
	// PublishEvery publishes a version after this many updates that
	// trained (default 1), and once more at the end for any remainder.
	PublishEvery int
	// MaxUpdates, when > 0, ends the run after this many updates that
	// trained (their version published, their records acknowledged), as
	// if the source were exhausted: one update on exactly one batch with 1.
	MaxUpdates int
	// SetAside sends a record the learner cannot train on to the source's
	// Reject and trains on the rest of its batch (a stream); otherwise such a
	// record stops the run with its error (a file).
	SetAside bool
	// Announce, when set, runs after each publish and before the records are
	// acknowledged (Redis: the policy pointer).
	Announce func(ctx context.Context, v policystore.Version) error
	// OnUpdate and OnPublish observe progress (metrics file, stderr line,
	// Prometheus).
	OnUpdate  func(Metrics)
	OnPublish func(policystore.Version, State)
	Logger    *slog.Logger

	// beforePublish is a test hook between an update and its publish;
	// afterPublish one between publishing and acknowledging.
	beforePublish, afterPublish func() error
}

// Summary is what a run did.
type Summary struct {
	Updates   int // updates that trained
	Published int // versions published
	// FirstVersion is the version the run started from, LastVersion the
	// last it published (or FirstVersion).
	FirstVersion, LastVersion int64
	Records                   int // records read
	Trained                   int // records trained on
	Dropped                   int // records over the staleness bound
	Rejected                  int // records and entries set aside (untrainable, or not decodable)
	Tokens                    int // tokens through forward and backward, epochs counted
	Steps                     int // optimiser steps
	Elapsed                   time.Duration
	Last                      Metrics // the last update's metrics
}

// ResumeFrom loads the store's latest version into l (when there is one)
// and acknowledges the records that version was trained on, which a crash
// may have left unacknowledged. It returns the version's state, or found
// false when the store is empty.
func ResumeFrom(ctx context.Context, l *Learner, store *policystore.Store, src Source) (State, bool, error) {
	v, err := store.Latest()
	if errors.Is(err, policystore.ErrNoVersion) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	if err := policystore.Verify(ctx, v); err != nil {
		return State{}, false, fmt.Errorf("resume from %s: %w", v.Dir, err)
	}
	st, err := l.Resume(v)
	if err != nil {
		return st, false, err
	}
	if err := src.Ack(ctx, st.Consumed); err != nil {
		return st, true, fmt.Errorf("resume from version %d: acknowledge its records: %w", v.Number, err)
	}
	return st, true, nil
}

// Run trains on src until it is exhausted (io.EOF) or ctx ends, publishing
// a version every PublishEvery trained updates and acknowledging the
// records of a version only after it is published. When ctx ends it
// finishes the update in progress and publishes it; the caller tells an
// interrupted run from a finished one by ctx.Err().
func Run(ctx context.Context, l *Learner, src Source, o RunOptions) (sum Summary, err error) {
	if o.PublishEvery <= 0 {
		o.PublishEvery = 1
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	start := time.Now()
	sum = Summary{FirstVersion: l.Version(), LastVersion: l.Version()}
	defer func() {
		sum.Elapsed = time.Since(start)
		// A stream source also sets aside entries that do not decode, which
		// Run never sees: its own count is the whole.
		if r, ok := src.(interface{ Rejected() int64 }); ok {
			sum.Rejected = int(r.Rejected())
		}
	}()
	// work outlives ctx: an update or a publish that began is finished.
	work := context.WithoutCancel(ctx)
	var consumed []string
	var records, since int
	publish := func() error {
		if o.beforePublish != nil {
			if err := o.beforePublish(); err != nil {
				return err
			}
		}
		v, err := l.Publish(work, o.Store, o.Base, consumed, records)
		if err != nil {
			return err
		}
		st, _ := ReadState(v)
		if o.Announce != nil {
			if err := o.Announce(work, v); err != nil {
				return fmt.Errorf("announce version %d: %w", v.Number, err)
			}
		}
		if o.afterPublish != nil {
			if err := o.afterPublish(); err != nil {
				return err
			}
		}
		if err := src.Ack(work, consumed); err != nil {
			return fmt.Errorf("acknowledge the records of version %d: %w", v.Number, err)
		}
		sum.Published++
		sum.LastVersion = v.Number
		if o.OnPublish != nil {
			o.OnPublish(v, st)
		}
		consumed, records, since = nil, 0, 0
		return nil
	}
	for ctx.Err() == nil {
		b, err := src.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil && len(b.Records) == 0 {
				break
			}
			return sum, err
		}
		if len(b.Records) == 0 {
			continue
		}
		sum.Records += len(b.Records)
		var met Metrics
		for {
			met, err = l.Update(work, b.Records)
			var re *RecordError
			if err != nil && o.SetAside && errors.As(err, &re) && b.IDs != nil {
				if b, err = setAside(work, src, b, re); err != nil {
					return sum, err
				}
				sum.Rejected++
				continue
			}
			break
		}
		if err != nil {
			return sum, err
		}
		sum.Dropped += met.Dropped
		if o.OnUpdate != nil {
			o.OnUpdate(met)
		}
		sum.Last = met
		if met.Steps == 0 {
			// Nothing trained (every record stale): nothing to publish. With
			// trained records waiting for their version, the entries are
			// acknowledged with it (its Consumed lists them); otherwise at
			// once, so that a stream of stale records does not pile up pending.
			if since > 0 {
				consumed = append(consumed, b.IDs...)
			} else if err := src.Ack(work, b.IDs); err != nil {
				return sum, err
			}
			continue
		}
		sum.Updates++
		sum.Steps += met.Steps
		sum.Trained += met.Records - met.Dropped
		sum.Tokens += met.Tokens * met.Epochs
		consumed = append(consumed, b.IDs...)
		records += met.Records - met.Dropped
		since++
		if since >= o.PublishEvery {
			if err := publish(); err != nil {
				return sum, err
			}
		}
		if o.MaxUpdates > 0 && sum.Updates >= o.MaxUpdates {
			break
		}
	}
	if since > 0 {
		if err := publish(); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// setAside rejects the record of re and returns the batch without it.
func setAside(ctx context.Context, src Source, b Batch, re *RecordError) (Batch, error) {
	for i := range b.Records {
		if b.Records[i].TrajectoryID != re.TrajectoryID {
			continue
		}
		if err := src.Reject(ctx, b.IDs[i], re.Error()); err != nil {
			return b, err
		}
		out := Batch{Records: append(append([]traj.AdvantageRecord(nil), b.Records[:i]...), b.Records[i+1:]...),
			IDs: append(append([]string(nil), b.IDs[:i]...), b.IDs[i+1:]...)}
		return out, nil
	}
	return b, fmt.Errorf("learner: %w (not found in its batch)", re)
}
