package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolrl/toolrl/tools/calculator"
	"github.com/toolrl/toolrl/traj"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newReg(t testing.TB, tools ...struct {
	tool Tool
	s    Settings
}) *Registry {
	t.Helper()
	reg := NewRegistry()
	for _, x := range tools {
		if err := reg.Register(x.tool, x.s); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

type reg1 = struct {
	tool Tool
	s    Settings
}

func fn(name string, f func(ctx context.Context, args json.RawMessage) (Result, error)) *Func {
	return &Func{ToolName: name, ToolDescription: name, Fn: f}
}

func call(name string) Call { return Call{Name: name, Arguments: json.RawMessage(`{}`)} }

func TestExecutorResults(t *testing.T) {
	reg := newReg(t,
		reg1{NewCalculator(calcLimits()), Settings{Bracket: "CALC"}},
		reg1{fn("echo", func(ctx context.Context, args json.RawMessage) (Result, error) {
			return Result{Content: "a\x00b\r\nc\x1b[31mred\x1b[0m\xff"}, nil
		}), Settings{}},
		reg1{fn("boom", func(ctx context.Context, args json.RawMessage) (Result, error) {
			var m map[string]int
			//lint:ignore SA5000 the nil map write is the panic under test
			m["x"]++
			return Result{}, nil
		}), Settings{}},
		reg1{fn("fail", func(ctx context.Context, args json.RawMessage) (Result, error) {
			return Result{}, errors.New("disk on fire")
		}), Settings{}},
		reg1{fn("big", func(ctx context.Context, args json.RawMessage) (Result, error) {
			return Result{Content: strings.Repeat("word ", 1000)}, nil
		}), Settings{MaxOutput: 20}},
	)
	ex := NewExecutor(reg, ExecutorOptions{Logger: quiet})
	ctx := context.Background()

	r := ex.Execute(ctx, Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"12 * 34"}`)})
	if !r.OK || r.Content != "408" || r.ErrorClass != "" {
		t.Errorf("calculator: %+v", r)
	}
	r = ex.Execute(ctx, Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"1/0"}`)})
	if r.OK || r.ErrorClass != ClassToolError || !strings.Contains(r.Content, "division by zero") {
		t.Errorf("1/0: %+v", r)
	}
	r = ex.Execute(ctx, Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"1+"}`)})
	if r.ErrorClass != ClassInvalidArgs || !strings.HasPrefix(r.Content, "error: invalid_args: syntax error") {
		t.Errorf("1+: %+v", r)
	}
	r = ex.Execute(ctx, Call{Name: "calculator", Arguments: json.RawMessage(`{"expr":"1"}`)})
	if r.ErrorClass != ClassSchema {
		t.Errorf("bad args: %+v", r)
	}
	r = ex.Execute(ctx, call("echo"))
	if !r.OK || r.Content != "ab\nc"+"red\uFFFD" {
		t.Errorf("echo normalised to %q", r.Content)
	}
	r = ex.Execute(ctx, call("boom"))
	if r.ErrorClass != ClassPanic || !strings.Contains(r.Error, "nil map") {
		t.Errorf("boom: %+v", r)
	}
	r = ex.Execute(ctx, call("fail"))
	if r.ErrorClass != ClassToolError || r.Content != "error: tool_error: disk on fire" {
		t.Errorf("fail: %+v", r)
	}
	r = ex.Execute(ctx, call("big"))
	if !r.OK || !r.Truncated || !strings.HasSuffix(r.Content, TruncationMarker) || EstimateTokens(r.Content) > 20 {
		t.Errorf("big: truncated=%v %d tokens: %q", r.Truncated, EstimateTokens(r.Content), r.Content)
	}
	r = ex.Execute(ctx, call("nope"))
	if r.ErrorClass != ClassUnknownTool {
		t.Errorf("nope: %+v", r)
	}
	r = ex.Execute(ctx, Call{Name: "calculator", Raw: "[CALC: 1", ErrorClass: ClassUnterminated, Error: "ended"})
	if r.ErrorClass != ClassUnterminated || r.Content != "error: unterminated: ended" {
		t.Errorf("parse failure: %+v", r)
	}
	if st := ex.Stats(); st.Panics != 1 || st.InFlight != 0 || st.Calls != 7 {
		t.Errorf("stats = %+v", st)
	}
}

func calcLimits() calculator.Limits { return calculator.Limits{} }

// TestExecutorTimeout checks the timeout mechanics without timing
// assertions: the tool gets a context with the call's deadline, Execute
// returns a timeout without waiting for a tool that ignores its context, the
// tool's context is done by then, and the slot is freed when the tool
// finally returns.
func TestExecutorTimeout(t *testing.T) {
	release := make(chan struct{})
	var toolCtx atomic.Pointer[context.Context]
	returned := make(chan struct{})
	var once sync.Once
	reg := newReg(t, reg1{fn("stuck", func(ctx context.Context, args json.RawMessage) (Result, error) {
		toolCtx.Store(&ctx)
		<-release // ignores ctx
		once.Do(func() { close(returned) })
		return Result{Content: "late"}, nil
	}), Settings{Timeout: 30 * time.Millisecond, Concurrency: 1}})
	ex := NewExecutor(reg, ExecutorOptions{Logger: quiet})
	before := time.Now()
	r := ex.Execute(context.Background(), call("stuck"))
	if r.ErrorClass != ClassTimeout || r.OK {
		t.Fatalf("stuck: %+v", r)
	}
	ctx := *toolCtx.Load()
	dl, ok := ctx.Deadline()
	if !ok || dl.Before(before.Add(30*time.Millisecond)) {
		t.Errorf("tool context deadline %v (ok=%v), want at least start+30ms", dl, ok)
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("tool context not done at return: %v", ctx.Err())
	}
	select {
	case <-returned:
		t.Fatal("Execute waited for the tool")
	default:
	}
	if st := ex.Stats(); st.InFlight != 1 || st.Timeouts != 1 {
		t.Errorf("stats while the tool hangs = %+v", st)
	}
	close(release)
	<-returned
	// The per-tool slot (concurrency 1) comes back once the tool returns:
	// a second call runs, and now returns at once.
	r = ex.Execute(context.Background(), call("stuck"))
	if !r.OK || r.Content != "late" {
		t.Errorf("second call: %+v", r)
	}
	if st := ex.Stats(); st.InFlight != 0 {
		t.Errorf("stats after = %+v", st)
	}
}

func TestExecutorCanceled(t *testing.T) {
	reg := newReg(t, reg1{fn("wait", func(ctx context.Context, args json.RawMessage) (Result, error) {
		<-ctx.Done()
		return Result{}, ctx.Err()
	}), Settings{Timeout: time.Hour}})
	ex := NewExecutor(reg, ExecutorOptions{Logger: quiet})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := ex.Execute(ctx, call("wait")); r.ErrorClass != ClassCanceled {
		t.Errorf("canceled: %+v", r)
	}
}

func TestEpisodeCaps(t *testing.T) {
	reg := newReg(t, reg1{NewCalculator(calcLimits()), Settings{}})
	ex := NewExecutor(reg, ExecutorOptions{MaxCallsPerTurn: 2, MaxCallsPerTrajectory: 4, Logger: quiet})
	ep := ex.NewEpisode()
	ok := Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"1+1"}`)}
	var classes []string
	for _, turn := range []int{0, 0, 0, 1, 1} {
		tc, tr := ep.Execute(context.Background(), turn, ok)
		if tc.ParseError != "" && !strings.HasPrefix(tc.ParseError, "over_cap: ") {
			t.Errorf("ParseError %q", tc.ParseError)
		}
		classes = append(classes, tr.ErrorClass)
	}
	if got := strings.Join(classes, ","); got != ",,over_cap,,over_cap" {
		t.Errorf("classes = %q", got)
	}
	if !ep.Exhausted() || ep.Calls() != 5 {
		t.Errorf("Exhausted=%v Calls=%d", ep.Exhausted(), ep.Calls())
	}
}

// TestEpisodeNoCalls: NoCalls (a job's max_tool_calls: 0) executes no call,
// where MaxCallsPerTrajectory 0 means no cap.
func TestEpisodeNoCalls(t *testing.T) {
	reg := newReg(t, reg1{NewCalculator(calcLimits()), Settings{}})
	ex := NewExecutor(reg, ExecutorOptions{NoCalls: true, Logger: quiet})
	ep := ex.NewEpisode()
	if !ep.Exhausted() {
		t.Error("a NoCalls episode is not Exhausted before its first call")
	}
	ok := Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"1+1"}`)}
	tc, tr := ep.Execute(context.Background(), 0, ok)
	if tr.ErrorClass != ClassOverCap || tr.OK || !strings.HasPrefix(tc.ParseError, "over_cap: ") {
		t.Errorf("call with NoCalls: %+v, %+v; want over_cap, not executed", tc, tr)
	}
	if n := ex.Stats().Calls; n != 0 {
		t.Errorf("executor ran %d calls, want 0", n)
	}
}

func TestTruncate(t *testing.T) {
	s := strings.Repeat("é", 100) // 200 bytes, 50 estimated tokens
	out, cut := Truncate(s, 10, nil)
	if !cut || EstimateTokens(out) > 10 || !strings.HasSuffix(out, TruncationMarker) || !strings.HasPrefix(s, strings.TrimSuffix(out, TruncationMarker)) {
		t.Errorf("Truncate = %q (%d tokens)", out, EstimateTokens(out))
	}
	if out, cut := Truncate("short", 10, nil); cut || out != "short" {
		t.Errorf("short truncated: %q", out)
	}
	words := func(s string) int { return len(strings.Fields(s)) }
	out, cut = Truncate("a b c d e f g", 4, words)
	if !cut || out != "a b c "+TruncationMarker {
		t.Errorf("word truncation = %q", out)
	}
}

func TestBracketInjection(t *testing.T) {
	if got := BracketInjection(traj.ToolResult{OK: true, Content: "408"}); got != " = 408" {
		t.Errorf("BracketInjection = %q", got)
	}
	if got := HermesInjection(traj.ToolResult{OK: true, Content: "408"}); got != "<tool_response>\n408\n</tool_response>" {
		t.Errorf("HermesInjection = %q", got)
	}
}
