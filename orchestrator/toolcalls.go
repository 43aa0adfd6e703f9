package orchestrator

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// collectTools injects the async results that have arrived; with wait it
// blocks for at least one.
func (r *runner) collectTools(ctx context.Context, wait bool) error {
	for r.pendingTools > 0 {
		var o toolOutcome
		if wait {
			select {
			case o = <-r.toolDone:
			case <-ctx.Done():
				return fmt.Errorf("aborted waiting for %d tool calls: %w", r.pendingTools, ctx.Err())
			}
			wait = false
		} else {
			select {
			case o = <-r.toolDone:
			default:
				return nil
			}
		}
		r.pendingTools--
		if err := r.deliver(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// execute runs a job's calls: one call as it always ran, a turn's calls
// through the episode's ExecuteTurn (caps counted in call order, the calls
// run concurrently).
func (r *runner) execute(ctx context.Context, j toolJob) toolOutcome {
	o := toolOutcome{job: j}
	if len(j.calls) == 1 && !r.format.TurnCalls() {
		c, res := j.sample.episode.Execute(ctx, j.turn, j.calls[0].call)
		o.calls, o.results = []traj.ToolCall{c}, []traj.ToolResult{res}
		o.ended = res.ErrorClass == tools.ClassOverCap
		return o
	}
	calls := make([]tools.Call, len(j.calls))
	for i, c := range j.calls {
		calls[i] = c.call
	}
	o.calls, o.results, o.ended = j.sample.episode.ExecuteTurn(ctx, j.turn, calls)
	return o
}

// record keeps calls of a turn that get no result.
func (sr *sampleRun) record(turn int, calls []turnCall) {
	for _, c := range calls {
		sr.calls = append(sr.calls, callRecord{turn: turn, call: c.call.Traj(), closeTokens: c.tokens, closeBytes: c.bytes})
	}
}

// deliver records a job's executed calls and injects their results as one
// tool turn, or ends the trajectory when a cap forbids going on.
func (r *runner) deliver(ctx context.Context, o toolOutcome) error {
	sr, j := o.job.sample, o.job
	recs := make([]callRecord, len(o.calls))
	for i, c := range o.calls {
		recs[i] = callRecord{turn: j.turn, call: c, closeTokens: j.calls[i].tokens, closeBytes: j.calls[i].bytes}
	}
	unanswered := func(reason traj.FinishReason) error {
		sr.calls = append(sr.calls, recs...)
		return r.end(ctx, sr, reason)
	}
	if o.ended {
		return unanswered(traj.FinishMaxToolCalls)
	}
	for i := range o.results {
		if !r.job.RecordLatency.Get() {
			o.results[i].LatencyMS = 0
		}
	}
	turn, err := r.format.Injection(o.results)
	if err != nil {
		return err
	}
	ids := turn.IDs
	at := sr.seq.Len() - sr.seq.PromptLen()
	if at+len(ids) > r.job.Limits.MaxTokens.Get() {
		return unanswered(traj.FinishLength)
	}
	if err := sr.seq.Inject(ids); err != nil {
		if errors.Is(err, actor.ErrNoRoom) {
			// The model's context cannot take the results: end like max_tokens.
			return unanswered(traj.FinishLength)
		}
		return fmt.Errorf("inject tool result: %w", err)
	}
	for i := range recs {
		result := o.results[i]
		recs[i].result = &result
		if i < len(turn.Ends) {
			recs[i].toolEnd = at + turn.Ends[i]
		}
	}
	sr.calls = append(sr.calls, recs...)
	return nil
}
