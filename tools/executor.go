package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/toolrl/toolrl/traj"
)

// ExecutorOptions configure an Executor. The zero value of each field means
// the default written beside it.
type ExecutorOptions struct {
	// GlobalLimit bounds the calls in flight across all tools (default 64).
	GlobalLimit int
	// DefaultTimeout bounds a call of a tool whose settings give none
	// (default 10s).
	DefaultTimeout time.Duration
	// MaxOutputTokens is the output budget of a tool whose settings give none
	// (default 512).
	MaxOutputTokens int
	// CountTokens counts tokens for the output budget (default EstimateTokens).
	CountTokens TokenCounter
	// MaxCallsPerTurn and MaxCallsPerTrajectory cap the calls an Episode
	// executes; calls past a cap fail as over_cap (0: no cap).
	MaxCallsPerTurn       int
	MaxCallsPerTrajectory int
	// NoCalls executes no call: every call fails as over_cap (a job's
	// max_tool_calls: 0, which MaxCallsPerTrajectory 0, "no cap", cannot
	// say).
	NoCalls bool
	// OverrunAfter is how long after its deadline a tool may return before
	// the call counts as an overrun in Stats and is logged (default 100ms).
	// The caller gets its timeout at the deadline either way.
	OverrunAfter time.Duration
	// Logger receives panics and overruns (default slog.Default()).
	Logger *slog.Logger
}

// Executor runs calls of a registry's tools under a global and a per-tool
// concurrency limit, with a per-call timeout, panic recovery and output
// normalisation. It is safe for concurrent use.
type Executor struct {
	reg     *Registry
	opts    ExecutorOptions
	global  *semaphore.Weighted
	perTool map[string]*semaphore.Weighted

	inFlight atomic.Int64
	peak     atomic.Int64
	calls    atomic.Int64
	timeouts atomic.Int64
	panics   atomic.Int64
	overruns atomic.Int64 // tools that returned long after their deadline
	// latency holds each registry tool's execution times; its keys are
	// fixed by NewExecutor, so it is read without a lock.
	latency map[string]*latencyHistogram
}

// NewExecutor returns an executor over reg.
func NewExecutor(reg *Registry, opts ExecutorOptions) *Executor {
	if opts.GlobalLimit <= 0 {
		opts.GlobalLimit = 64
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = 10 * time.Second
	}
	if opts.MaxOutputTokens <= 0 {
		opts.MaxOutputTokens = 512
	}
	if opts.CountTokens == nil {
		opts.CountTokens = EstimateTokens
	}
	if opts.OverrunAfter <= 0 {
		opts.OverrunAfter = 100 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	e := &Executor{
		reg:     reg,
		opts:    opts,
		global:  semaphore.NewWeighted(int64(opts.GlobalLimit)),
		perTool: map[string]*semaphore.Weighted{},
		latency: map[string]*latencyHistogram{},
	}
	for name, ent := range reg.entries {
		e.latency[name] = newLatencyHistogram()
		if ent.settings.Concurrency > 0 {
			e.perTool[name] = semaphore.NewWeighted(int64(ent.settings.Concurrency))
		}
	}
	return e
}

// Registry returns the executor's registry.
func (e *Executor) Registry() *Registry { return e.reg }

// ExecutorStats are counters since the executor was made.
type ExecutorStats struct {
	Calls        int64 // calls executed (valid calls that got their slots)
	InFlight     int64 // tool executions running now
	PeakInFlight int64 // the most tool executions running at once
	Timeouts     int64
	Panics       int64
	// Overruns counts tools that returned more than OverrunAfter past their
	// deadline (they held their slots until then). A tool still running
	// past its deadline shows in InFlight.
	Overruns int64
	// Latency holds, by registry tool name, the execution times of the
	// calls that ran (those counted in Calls), timeouts included. A tool
	// that never ran has a zero ToolLatency.
	Latency map[string]ToolLatency
}

// Stats returns the executor's counters.
func (e *Executor) Stats() ExecutorStats {
	return ExecutorStats{
		Calls: e.calls.Load(), InFlight: e.inFlight.Load(), PeakInFlight: e.peak.Load(),
		Timeouts: e.timeouts.Load(), Panics: e.panics.Load(), Overruns: e.overruns.Load(),
		Latency: e.latencyStats(),
	}
}

// Failure returns the result recorded for a call that failed with class and
// detail: not OK, and content "error: <class>: <detail>" for the model to read.
func Failure(class, detail string) traj.ToolResult {
	return traj.ToolResult{ErrorClass: class, Error: detail, Content: "error: " + class + ": " + detail}
}

type outcome struct {
	res   Result
	err   error
	fault string // the injected fault that had an effect, if any
}

// Execute runs one call and returns its result; it never panics and never
// returns later than the call's deadline (plus scheduling), whatever the tool
// does: a tool that ignores its context keeps its goroutine and slots until
// it returns, and is counted in Stats().Overruns if that is long after. A call that failed parsing is not run: its result carries the parse
// error class. Waiting for a concurrency slot is bounded by ctx only; the
// per-call timeout starts once the call holds its slots, and LatencyMS is the
// time from then to the result.
//
// Execute injects no faults (Settings.Faults): a call has an identity to
// draw them from only in an Episode.
func (e *Executor) Execute(ctx context.Context, c Call) traj.ToolResult {
	return e.finish(c.Name, e.execute(ctx, c, nil))
}

// executeAt is Execute with the call's identity for fault injection (nil:
// none).
func (e *Executor) executeAt(ctx context.Context, c Call, key *callKey) traj.ToolResult {
	return e.finish(c.Name, e.execute(ctx, c, key))
}

func (e *Executor) execute(ctx context.Context, c Call, key *callKey) traj.ToolResult {
	if !c.OK() {
		return Failure(c.ErrorClass, c.Error)
	}
	ent, ok := e.reg.entries[c.Name]
	if !ok {
		return Failure(ClassUnknownTool, fmt.Sprintf("no tool named %q", truncateForError(c.Name)))
	}
	args := c.Arguments
	if args == nil {
		args = json.RawMessage(`{}`)
	}
	if !c.validated {
		if err := e.reg.Validate(c.Name, args); err != nil {
			return failureOf(err)
		}
	}

	if sem := e.perTool[c.Name]; sem != nil {
		if err := sem.Acquire(ctx, 1); err != nil {
			return failureOf(fmt.Errorf("waiting for a %s slot: %w", c.Name, ctxErr(ctx, err)))
		}
	}
	if err := e.global.Acquire(ctx, 1); err != nil {
		if sem := e.perTool[c.Name]; sem != nil {
			sem.Release(1)
		}
		return failureOf(fmt.Errorf("waiting for a slot: %w", ctxErr(ctx, err)))
	}
	e.calls.Add(1)
	if n := e.inFlight.Add(1); n > e.peak.Load() {
		for {
			p := e.peak.Load()
			if n <= p || e.peak.CompareAndSwap(p, n) {
				break
			}
		}
	}

	timeout := ent.settings.Timeout
	if timeout <= 0 {
		timeout = e.opts.DefaultTimeout
	}
	var fault faultDraw
	if key != nil && ent.settings.Faults.Active() {
		fault = ent.settings.Faults.draw(*key)
		if fault.kind == FaultTimeout || fault.delay >= timeout {
			return e.injectedTimeout(c.Name, timeout, fault)
		}
	}
	start := time.Now()
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan outcome, 1)
	deadline, _ := callCtx.Deadline()
	go func() {
		var o outcome
		if fault.kind == "" && fault.delay == 0 {
			o = e.run(callCtx, ent.tool, args) // run recovers panics
		} else {
			o = e.runFaulty(callCtx, c.Name, ent.tool, args, fault)
		}
		if late := time.Since(deadline); late > e.opts.OverrunAfter {
			e.overruns.Add(1)
			e.opts.Logger.Warn("tool returned long after its deadline", "tool", c.Name, "late", late)
		}
		// The slots are freed when the tool really returns, so that the
		// limits bound the work in flight even for a tool that ignores ctx;
		// and before the result is handed over, so that the caller sees
		// its own call out of the counts.
		e.inFlight.Add(-1)
		e.global.Release(1)
		if sem := e.perTool[c.Name]; sem != nil {
			sem.Release(1)
		}
		done <- o
	}()

	var out traj.ToolResult
	select {
	case o := <-done:
		if o.err != nil {
			out = failureOf(o.err)
		} else {
			out = traj.ToolResult{OK: true, Content: o.res.Content}
		}
		out.Fault = o.fault
	case <-callCtx.Done():
		// The tool has not returned: report at the deadline.
		if errors.Is(ctx.Err(), context.Canceled) {
			out = Failure(ClassCanceled, ctx.Err().Error())
		} else {
			out = Failure(ClassTimeout, timeoutDetail(c.Name, timeout))
		}
	}
	if out.ErrorClass == ClassTimeout {
		e.timeouts.Add(1)
	}
	elapsed := time.Since(start)
	out.LatencyMS = float64(elapsed.Microseconds()) / 1000
	if h := e.latency[c.Name]; h != nil {
		h.observe(elapsed)
	}
	return out
}

// timeoutDetail is a timed-out call's error detail.
func timeoutDetail(name string, timeout time.Duration) string {
	return fmt.Sprintf("%s did not finish within %s", name, timeout)
}

// run calls the tool and turns a panic into an error.
func (e *Executor) run(ctx context.Context, t Tool, args json.RawMessage) (o outcome) {
	defer func() {
		if r := recover(); r != nil {
			e.panics.Add(1)
			e.opts.Logger.Error("tool panicked", "tool", t.Name(), "panic", r, "stack", string(debug.Stack()))
			o = outcome{err: &Error{Class: ClassPanic, Err: fmt.Errorf("%v", r)}}
		}
	}()
	res, err := t.Execute(ctx, args)
	return outcome{res: res, err: err}
}

// ctxErr prefers the context's own error (deadline or cancellation) to the
// semaphore's copy of it.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func failureOf(err error) traj.ToolResult {
	class := ClassOf(err)
	detail := err.Error()
	var ce *Error
	if errors.As(err, &ce) {
		detail = ce.Err.Error()
	}
	return Failure(class, detail)
}

// finish normalises and truncates the content to the tool's budget.
func (e *Executor) finish(name string, r traj.ToolResult) traj.ToolResult {
	budget := e.opts.MaxOutputTokens
	if ent, ok := e.reg.entries[name]; ok && ent.settings.MaxOutput > 0 {
		budget = ent.settings.MaxOutput
	}
	r.Content = Normalize(r.Content)
	r.Content, r.Truncated = Truncate(r.Content, budget, e.opts.CountTokens)
	return r
}
