package tools

import (
	"context"
	"fmt"
	"sync"

	"github.com/toolrl/toolrl/traj"
)

// Episode applies the per-turn and per-trajectory call caps of one
// trajectory. Every call the model makes counts, valid or not; a call past a
// cap is not executed and fails as over_cap. Make one per trajectory with
// Executor.NewEpisode; it is safe for concurrent use.
type Episode struct {
	e      *Executor
	seed   uint64 // the faults' seed (Settings.Faults)
	mu     sync.Mutex
	turn   int
	inTurn int
	total  int
}

// NewEpisode starts the call accounting of one trajectory; its faults (a
// tool's Settings.Faults) are drawn with seed 0, as NewSeededEpisode(0).
func (e *Executor) NewEpisode() *Episode { return e.NewSeededEpisode(0) }

// NewSeededEpisode starts the call accounting of one trajectory whose
// injected faults are drawn from seed and each call's index among the
// trajectory's calls (every call the model wrote counts, as for the caps):
// the same seed and calls give the same faults. The rollout passes the
// trajectory's sampling seed (traj.Trajectory.Seed), itself a function of
// the job's seed, the prompt and the sample's index.
func (e *Executor) NewSeededEpisode(seed uint64) *Episode {
	return &Episode{e: e, seed: seed, turn: -1}
}

// Calls is the number of calls counted so far, over-cap ones included.
func (ep *Episode) Calls() int {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.total
}

// Exhausted reports whether the per-trajectory cap is reached, so that the
// orchestrator can end the trajectory (finish reason max_tool_calls).
func (ep *Episode) Exhausted() bool {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	max := ep.e.opts.MaxCallsPerTrajectory
	return ep.e.opts.NoCalls || max > 0 && ep.total >= max
}

// admit counts a call of the given turn and returns the cap it breaks, if any.
func (ep *Episode) admit(turn int) (detail string, key callKey) {
	detail, _, key = ep.admitCap(turn)
	return detail, key
}

// admitCap is admit that also says whether the cap broken is the
// trajectory's (or no calls at all), which ends the trajectory, rather than
// the turn's, which fails only the call; and the call's identity for
// fault injection.
func (ep *Episode) admitCap(turn int) (detail string, trajectoryCap bool, key callKey) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if turn != ep.turn {
		ep.turn, ep.inTurn = turn, 0
	}
	key = callKey{seed: ep.seed, index: ep.total}
	ep.inTurn++
	ep.total++
	opts := ep.e.opts
	if opts.NoCalls {
		return fmt.Sprintf("call %d of the trajectory: no calls are allowed (cap 0)", ep.total), true, key
	}
	if opts.MaxCallsPerTrajectory > 0 && ep.total > opts.MaxCallsPerTrajectory {
		return fmt.Sprintf("call %d of the trajectory is past the cap of %d", ep.total, opts.MaxCallsPerTrajectory), true, key
	}
	if opts.MaxCallsPerTurn > 0 && ep.inTurn > opts.MaxCallsPerTurn {
		return fmt.Sprintf("call %d of turn %d is past the per-turn cap of %d", ep.inTurn, turn, opts.MaxCallsPerTurn), false, key
	}
	return "", false, key
}

// Execute counts a call the model made in the given turn (turns count model
// turns from 0 and do not decrease) and, unless it is past a cap, executes it.
// It returns the call and the result as the trajectory records them: an
// over-cap call gets ParseError "over_cap: ..." and a failed result of that
// class.
func (ep *Episode) Execute(ctx context.Context, turn int, c Call) (traj.ToolCall, traj.ToolResult) {
	detail, key := ep.admit(turn)
	if detail != "" && c.OK() {
		c.ErrorClass, c.Error = ClassOverCap, detail
	}
	return c.Traj(), ep.e.executeAt(ctx, c, &key)
}

// ExecuteTurn counts the calls one assistant turn made, in order, and runs
// those within the caps concurrently (under the executor's global limit and
// timeouts; each result truncated on its own). It returns every call and
// result in call order. A call past the per-turn cap is not run and gets an
// over_cap result, as a malformed call gets its own failed result: the
// others run. When a call is past the trajectory's cap, ended is true and
// none of the turn's calls is run (their results are zero): the trajectory
// ends there, and running calls whose results are never read would only
// cost.
func (ep *Episode) ExecuteTurn(ctx context.Context, turn int, calls []Call) (tc []traj.ToolCall, results []traj.ToolResult, ended bool) {
	calls = append([]Call(nil), calls...)
	keys := make([]callKey, len(calls))
	for i := range calls {
		detail, trajectoryCap, key := ep.admitCap(turn)
		keys[i] = key
		if detail != "" && calls[i].OK() {
			calls[i].ErrorClass, calls[i].Error = ClassOverCap, detail
		}
		ended = ended || trajectoryCap
	}
	tc = make([]traj.ToolCall, len(calls))
	for i, c := range calls {
		tc[i] = c.Traj()
	}
	if ended {
		return tc, nil, true
	}
	results = make([]traj.ToolResult, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { results[i] = ep.e.executeAt(ctx, c, &keys[i]) })
	}
	wg.Wait()
	return tc, results, false
}
