package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/sink"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// groupRun is one prompt's group in flight.
type groupRun struct {
	prompt prompt.Prompt
	id     string
	// version and model are the policy the group is sampled with, fixed
	// when it starts (a reload waits for in-flight groups).
	version  int64
	model    traj.ModelRef
	seqs     []*actor.Sequence
	samples  []*sampleRun
	finished int
}

// sampleRun is one trajectory's orchestration state.
type sampleRun struct {
	group    *groupRun
	seq      *actor.Sequence
	detector *callDetector
	episode  *tools.Episode
	calls    []callRecord
	finish   traj.FinishReason
}

// callRecord is a call the policy made in a turn, and what became of it.
type callRecord struct {
	turn   int
	call   traj.ToolCall
	result *traj.ToolResult // nil when the call was not executed (unterminated, caps)
	// In turn mode a turn's model segment is split after each call but the
	// last, and its tool segment after each result: closeTokens and
	// closeBytes are where the call closed in its turn (0: at the
	// segment's end), toolEnd where its part of the tool turn ends (an
	// offset into the response; 0 when there is none).
	closeTokens, closeBytes, toolEnd int
}

// toolJob is a turn's calls waiting to run: one call in plain mode, every
// call of the assistant turn in turn mode.
type toolJob struct {
	sample *sampleRun
	turn   int
	calls  []turnCall
}

type runner struct {
	job      Job
	opts     RunOptions
	log      *slog.Logger
	pol      *actor.Policy
	ref      *actor.Policy
	eng      *actor.Engine
	format   Format
	registry *tools.Registry
	exec     *tools.Executor
	sink     sink.Sink
	feed     prompt.Feed
	model    traj.ModelRef
	sampling actor.Sampling
	summary  *Summary
	progress Progress

	// done holds the ids of groups the sink held when the run began (nil
	// without resume); seen those this run started. A fed prompt whose group
	// is in either is not sampled again.
	done, seen map[string]bool

	bySeq    map[*actor.Sequence]*sampleRun
	inflight int // sequences of groups not yet written
	correct  map[*sampleRun]bool

	// Async tool mode: calls run in the background and their results come
	// back on toolDone; pendingTools counts those not yet injected. toolWG
	// counts the goroutines running them, which close waits for (closing
	// toolStop first) before it closes the tools: none outlives Run.
	toolDone     chan toolOutcome
	pendingTools int
	toolWG       sync.WaitGroup
	toolStop     chan struct{}

	// Hot reload (reload.go). version is the loaded policy version, next a
	// newer one the source offered, loaded once nothing is in flight; held
	// is a prompt taken from the feed that waits for that (or, gated, for a
	// version ≥ its MinPolicyVersion) and starts first.
	version     int64
	next        *PolicyRef
	held        *prompt.Prompt
	refused     map[int64]bool
	lastPoll    time.Time
	lastPollErr string
	// tokenizerHash is the SHA-256 of the running tokenizer.json: a version
	// must keep the tokenizer the format and tool markup were built with.
	tokenizerHash string
	// decodeWall is the actor time of the engines closed by reloads.
	decodeWall time.Duration
}

// toolOutcome is an executed call on its way back to its sequence.
type toolOutcome struct {
	job     toolJob
	calls   []traj.ToolCall
	results []traj.ToolResult
	// ended: a call was past the trajectory's cap; nothing was run.
	ended bool
}

// Run executes a rollout job and returns its summary. Cancelling ctx stops
// taking prompts; in-flight groups finish and are written whole (see
// RunOptions.Abort). The summary is returned even when err is not nil.
func Run(ctx context.Context, job Job, opts RunOptions) (*Summary, error) {
	start := time.Now()
	if err := job.Normalize(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ProgressOut == nil {
		opts.ProgressOut = os.Stderr
	}
	if job.Batch.Get() < job.GroupSize.Get() {
		return nil, fmt.Errorf("batch: %d is smaller than group_size %d; a group is decoded together", job.Batch.Get(), job.GroupSize.Get())
	}
	if opts.Iteration < 0 {
		return nil, fmt.Errorf("iteration: %d, want ≥ 0", opts.Iteration)
	}
	if opts.PolicyPoll <= 0 {
		opts.PolicyPoll = defaultPolicyPoll
	}
	r := &runner{job: job, opts: opts, log: opts.Logger, summary: newSummary(job.ID.Get()), seen: map[string]bool{},
		bySeq: map[*actor.Sequence]*sampleRun{}, correct: map[*sampleRun]bool{},
		toolDone: make(chan toolOutcome, 4*job.Batch.Get()), toolStop: make(chan struct{}),
		version: job.PolicyVersion.Get(), refused: map[int64]bool{}}
	r.summary.PolicyVersion = job.PolicyVersion.Get()
	r.summary.Watching = opts.Policy != nil
	defer r.close()
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	err := r.loop(ctx)
	r.progress.Finish()
	r.summary.Wall = time.Since(start)
	r.summary.DecodeWall = r.decodeWall + r.eng.Stats().StepTime
	if feed, ok := r.feed.(*prompt.RedisFeed); ok {
		stats := feed.Stats()
		r.summary.Worker = &stats
	}
	if ctx.Err() != nil {
		r.summary.Interrupted = true
	}
	r.publish()
	if cerr := r.sink.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close sink %s: %w", sink.DisplayOut(job.Out.Get()), cerr)
	}
	r.sink = nil
	return r.summary, err
}

// loop admits groups, steps the engine, runs tool calls and writes finished
// groups until the feed is exhausted (or ctx is cancelled) and nothing is in
// flight.
func (r *runner) loop(ctx context.Context) error {
	// Work beyond the batch keeps the engine busy while sequences wait on tools.
	maxInflight := 2 * r.job.Batch.Get()
	// In-flight groups finish under drain even after ctx is cancelled, unless
	// Abort is closed. drain ends with loop, which cancels any tool call still
	// running (close then waits for it).
	drain, stopDrain := context.WithCancel(context.WithoutCancel(ctx))
	defer stopDrain()
	if r.opts.Abort != nil {
		go func() {
			select {
			case <-r.opts.Abort:
				stopDrain()
			case <-drain.Done():
			}
		}()
	}
	exhausted := false
	for {
		r.publish()
		stopping := ctx.Err() != nil
		if !stopping && r.opts.Policy != nil {
			// Between groups: a newer version is loaded once the groups in
			// flight have finished on the old one (a group is never sampled
			// across two versions).
			// (Not when the feed is exhausted and nothing waits: the run is over.)
			r.pollPolicy(ctx, false)
			if r.next != nil && r.inflight == 0 && (!exhausted || r.held != nil) {
				r.reload(ctx)
			}
		}
		for !stopping && r.next == nil && r.inflight+r.job.GroupSize.Get() <= maxInflight {
			var p prompt.Prompt
			fresh := r.held == nil
			if !fresh {
				p, r.held = *r.held, nil
			} else {
				if exhausted {
					break
				}
				// Block only when nothing is in flight: otherwise decoding goes on.
				block := r.inflight == 0
				var ok bool
				var err error
				p, ok, err = r.feed.Next(ctx, block)
				if err != nil {
					if ctx.Err() != nil {
						break
					}
					return fmt.Errorf("read next prompt: %w", err)
				}
				if !ok {
					exhausted = block
					break
				}
				if r.opts.Feed != nil {
					// A file's prompts are counted when read; a feed's as it
					// hands them out.
					r.summary.PromptsTotal++
				}
				if skip, err := r.alreadyDone(ctx, p); err != nil || skip {
					if err != nil {
						return err
					}
					continue
				}
			}
			wait, err := r.mustWait(ctx, p, fresh)
			if err != nil {
				return err
			}
			if wait {
				r.held = &p
				break
			}
			if err := r.startGroup(ctx, p); err != nil {
				return err
			}
		}
		if r.inflight == 0 {
			if stopping || exhausted && r.held == nil {
				return nil
			}
			if r.held != nil && r.next == nil {
				// Gated with nothing in flight: wait for the next poll.
				r.waitPoll(ctx)
			}
			continue
		}
		if drain.Err() != nil {
			return fmt.Errorf("aborted with %d sequences in flight: %w", r.inflight, drain.Err())
		}
		if r.pendingTools > 0 {
			// Async tools: inject what has come back; wait only when no
			// sequence could decode meanwhile.
			if err := r.collectTools(drain, r.eng.Idle()); err != nil {
				return err
			}
			if r.eng.Idle() {
				continue
			}
		}
		events, err := r.eng.Step(drain)
		if err != nil {
			return fmt.Errorf("decode step: %w", err)
		}
		if err := r.handle(drain, events); err != nil {
			return err
		}
	}
}

// handle reacts to a step's events in their order: paused sequences get
// their call executed (all of this step's calls concurrently, then injected
// in event order, so the outcome does not depend on tool timing) and
// finished sequences close their group when it is complete.
func (r *runner) handle(ctx context.Context, events []actor.Event) error {
	var jobs []toolJob
	for _, ev := range events {
		sr := r.bySeq[ev.Seq]
		if sr == nil {
			return fmt.Errorf("engine reported an unknown sequence %s/%d", ev.Seq.GroupID(), ev.Seq.Index())
		}
		switch ev.Kind {
		case actor.EventToolCall:
			var calls []turnCall
			if r.format.TurnCalls() && r.opts.Hooks.Pauses == nil {
				calls = sr.detector.takeTurn()
			} else if call, ok := sr.detector.take(); ok {
				calls = []turnCall{{call: call}}
			}
			if len(calls) == 0 {
				return fmt.Errorf("sequence %s/%d paused without a parsed call", sr.group.id, ev.Seq.Index())
			}
			turn := sr.seq.Turn()
			if turn+1 >= r.job.Limits.MaxTurns.Get() {
				// No turn is left to read the results in: record the calls unexecuted.
				sr.record(turn, calls)
				if err := r.end(ctx, sr, traj.FinishMaxTurns); err != nil {
					return err
				}
				continue
			}
			jobs = append(jobs, toolJob{sample: sr, turn: turn, calls: calls})
		case actor.EventFinished:
			sr.record(sr.seq.Turn(), sr.detector.flush())
			sr.finish = ev.Seq.FinishReason()
			if err := r.finished(ctx, sr); err != nil {
				return err
			}
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	if r.job.AsyncTools.Get() {
		for _, j := range jobs {
			r.pendingTools++
			r.toolWG.Add(1)
			go func() {
				defer r.toolWG.Done()
				o := r.execute(ctx, j)
				select {
				case r.toolDone <- o:
				case <-r.toolStop: // the run is over; nobody reads the result
				}
			}()
		}
		return nil
	}
	// Lockstep: every call of this step runs concurrently, and the results
	// are injected in event order once all are back, so the batches (and so
	// the output, bit for bit) never depend on tool timing.
	outcomes := make([]toolOutcome, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i] = r.execute(ctx, j)
		}()
	}
	wg.Wait()
	for _, o := range outcomes {
		if err := r.deliver(ctx, o); err != nil {
			return err
		}
	}
	return nil
}
