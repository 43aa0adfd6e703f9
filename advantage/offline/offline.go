// Package offline computes advantage records over a file of trajectories
// (Run): it assembles groups by group_id with bounded memory, spilling
// partial groups to temporary files (the grouper), skips repeated identical
// trajectories, optionally scores missing reference logprobs, and writes each
// group's records (advantage.Compute) as soon as the group is complete.
package offline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/traj"
)

// TrajectorySource yields trajectories one at a time and io.EOF after the
// last (export.TrajectoryReader is one).
type TrajectorySource interface {
	Next() (traj.Trajectory, error)
}

// RecordSink receives advantage records (export.AdvantageWriter is one). The
// records share slices with the trajectories they came from; a sink may keep
// them.
type RecordSink interface {
	Write(records ...traj.AdvantageRecord) error
}

// Options configures Run. Config is required; the rest have the
// documented defaults.
type Options struct {
	Config advantage.Config
	// MemoryLimit bounds the estimated bytes of partial groups held in
	// memory; past it they spill to temporary files. 0 means 256 MiB.
	MemoryLimit int64
	// SpillDir is where spill files go; "" means os.TempDir(). The files are
	// unlinked as soon as they are created.
	SpillDir string
	// AllowIncomplete computes groups that have fewer members than their
	// group_size at the end of the input over the members present; without
	// it such a group is an error.
	AllowIncomplete bool
	// RefScorer, when set, scores trajectories that have no ref_log_prob,
	// each at the temperature it was sampled at (advantage.ReferenceTemperature).
	RefScorer advantage.RefScorer
	// RefTemperature is the temperature RefScorer scores trajectories that
	// record none at (v1 data); 0 means 1.
	RefTemperature float64
	// RefBatch is the number of sequences per RefScorer call; 0 means 16.
	RefBatch int
	// Logger receives progress; nil means slog.Default().
	Logger *slog.Logger
}

// Stats is what Run did.
type Stats struct {
	advantage.Stats
	// Trajectories read from the source.
	Trajectories int64
	// Duplicates are trajectories skipped because the input had already
	// yielded one with the same id and content (a group written twice).
	Duplicates int64
	// Incomplete groups found at the end (computed only with AllowIncomplete).
	Incomplete int64
	// Spilled trajectories written to temporary files.
	Spilled int64
	// PeakPartialBytes is the largest estimate of partial-group bytes held.
	PeakPartialBytes int64
	// RefScored trajectories whose ref_log_prob came from the RefScorer.
	RefScored int64
	// PeakWaitingGroups is the most complete groups held at once waiting for
	// reference scoring (at most RefBatch: groups that need no scoring are
	// written as they complete).
	PeakWaitingGroups int64
}

// Run reads every trajectory of src, assembles groups by group_id (in any
// order, with bounded memory), computes their advantage records and writes
// them to dst as each group completes. A trajectory whose reward fails
// traj.Trajectory.ValidateRewardSums is an error naming its group (and its
// file line or row, when src has a Position method as export's readers do).
// A trajectory id seen before is skipped (counted in Duplicates) when the
// content is the same, and an error otherwise. It stops at the first error,
// and when ctx is cancelled.
func Run(ctx context.Context, src TrajectorySource, dst RecordSink, opts Options) (Stats, error) {
	var st Stats
	if err := opts.Config.Validate(); err != nil {
		return st, err
	}
	if opts.MemoryLimit <= 0 {
		opts.MemoryLimit = 256 << 20
	}
	if opts.RefTemperature == 0 {
		opts.RefTemperature = 1
	}
	if opts.RefBatch <= 0 {
		opts.RefBatch = 16
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	o := &pass{dst: dst, opts: opts, st: &st}
	gr := newGrouper(opts.MemoryLimit, opts.SpillDir, func(members []traj.Trajectory) error { return o.add(ctx, members) })
	seen := newDedupe()
	defer gr.Close()
	for {
		if st.Trajectories%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return st, err
			}
		}
		t, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, fmt.Errorf("read trajectories (after %d): %w", st.Trajectories, err)
		}
		st.Trajectories++
		if err := t.ValidateRewardSums(); err != nil {
			return st, fmt.Errorf("%sgroup %s: %w", position(src), t.GroupID, err)
		}
		repeat, err := seen.check(&t)
		if err != nil {
			return st, fmt.Errorf("%s%w", position(src), err)
		}
		if repeat {
			st.Duplicates++
			continue
		}
		if err := gr.Add(t); err != nil {
			return st, err
		}
	}
	err := gr.Finish(func(members []traj.Trajectory) error {
		st.Incomplete++
		if !opts.AllowIncomplete {
			return fmt.Errorf("group %s has %d of its %d trajectories at the end of the input (use AllowIncomplete to compute it anyway)",
				members[0].GroupID, len(members), members[0].GroupSize)
		}
		return o.add(ctx, members)
	})
	st.Spilled, st.PeakPartialBytes = gr.Spilled, gr.Peak
	if err != nil {
		return st, err
	}
	if err := o.flush(ctx); err != nil {
		return st, err
	}
	if st.Duplicates > 0 {
		opts.Logger.Warn("skipped repeated trajectories of the input", "duplicates", st.Duplicates)
	}
	return st, nil
}

// position returns "FILE line N: " (or "FILE row N: ") for the trajectory
// src returned last, when src can tell (export's readers can), else "".
func position(src TrajectorySource) string {
	if p, ok := src.(interface{ Position() string }); ok {
		return p.Position() + ": "
	}
	return ""
}

type pass struct {
	dst  RecordSink
	opts Options
	st   *Stats

	// ready holds complete groups waiting for reference scoring, so that the
	// scorer sees batches of RefBatch sequences; toScore counts their
	// trajectories that lack references.
	ready   []traj.Group
	toScore int
}

// add takes one assembled group.
func (o *pass) add(ctx context.Context, members []traj.Trajectory) error {
	g := traj.NewGroup(members)
	if len(members) == members[0].GroupSize {
		if err := g.Validate(); err != nil {
			return err
		}
	} else {
		// An incomplete group (AllowIncomplete) is computed over the members
		// that arrived; they keep their group_size.
		for i := range g.Trajectories {
			if err := g.Trajectories[i].Validate(); err != nil {
				return fmt.Errorf("incomplete group %s: %w", g.GroupID, err)
			}
		}
	}
	needs := 0
	if o.opts.RefScorer != nil {
		for i := range g.Trajectories {
			if g.Trajectories[i].RefLogprobs == nil {
				needs++
			}
		}
	}
	if needs == 0 {
		// A group with every reference is written at once rather than queued
		// behind groups that wait for scoring: what is held stays bounded by
		// RefBatch trajectories to score, whatever follows them.
		return o.write(&g)
	}
	o.ready = append(o.ready, g)
	o.toScore += needs
	o.st.PeakWaitingGroups = max(o.st.PeakWaitingGroups, int64(len(o.ready)))
	if o.toScore >= o.opts.RefBatch {
		return o.flush(ctx)
	}
	return nil
}

// flush scores what needs scoring, then computes and writes every ready group.
func (o *pass) flush(ctx context.Context) error {
	if o.toScore > 0 {
		if err := o.score(ctx); err != nil {
			return err
		}
	}
	for i := range o.ready {
		if err := o.write(&o.ready[i]); err != nil {
			return err
		}
	}
	clear(o.ready)
	o.ready = o.ready[:0]
	return nil
}

// write computes g's records and writes them.
func (o *pass) write(g *traj.Group) error {
	recs, st, err := advantage.Compute(g, o.opts.Config)
	if err != nil {
		return err
	}
	o.st.Add(st)
	if len(recs) > 0 {
		if err := o.dst.Write(recs...); err != nil {
			return fmt.Errorf("write advantages of group %s: %w", g.GroupID, err)
		}
	}
	return nil
}

// score fills ref_log_prob of the ready trajectories that lack them
// (advantage.ScoreReferences, each at its own sampling temperature), in
// batches of RefBatch sequences. A trajectory that cannot be scored stops
// the pass, named.
func (o *pass) score(ctx context.Context) error {
	var pending []*traj.Trajectory
	for gi := range o.ready {
		for ti := range o.ready[gi].Trajectories {
			if t := &o.ready[gi].Trajectories[ti]; t.RefLogprobs == nil {
				pending = append(pending, t)
			}
		}
	}
	failed, err := advantage.ScoreReferences(ctx, o.opts.RefScorer, pending, o.opts.RefBatch, o.opts.RefTemperature)
	if err != nil {
		return err
	}
	for i, t := range pending {
		if failed[i] != nil {
			return fmt.Errorf("reference scoring of trajectory %s: %w", t.ID, failed[i])
		}
		o.st.RefScored++
	}
	o.toScore = 0
	return nil
}
