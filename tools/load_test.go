package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/toolrl/toolrl/tools/internal/proctest"
)

// gauge tracks how many executions of a tool run at once, and the peak.
type gauge struct{ cur, peak atomic.Int64 }

func (g *gauge) enter() {
	n := g.cur.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (g *gauge) leave() { g.cur.Add(-1) }

// TestLoad runs 10,000 calls from 64 concurrent callers against a registry
// with fast, hanging, panicking and process-spawning tools, and checks that
// every call ends with a result, that no limit is exceeded, and that no
// goroutine or child process outlives the run.
func TestLoad(t *testing.T) {
	const (
		calls       = 10000
		callers     = 64
		globalLimit = 24
	)
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	var gCalc, gHang, gProc, gAll gauge
	wrap := func(g *gauge, f func(ctx context.Context, args json.RawMessage) (Result, error)) func(ctx context.Context, args json.RawMessage) (Result, error) {
		return func(ctx context.Context, args json.RawMessage) (Result, error) {
			g.enter()
			gAll.enter()
			defer g.leave()
			defer gAll.leave()
			return f(ctx, args)
		}
	}
	calc := NewCalculator(calcLimits())
	var gFast, gPanic gauge
	reg := newReg(t,
		reg1{fn("calc", wrap(&gCalc, func(ctx context.Context, args json.RawMessage) (Result, error) {
			return calc.Execute(ctx, args)
		})), Settings{Concurrency: 16}},
		reg1{fn("fast", wrap(&gFast, func(ctx context.Context, args json.RawMessage) (Result, error) {
			return Result{Content: "ok"}, nil
		})), Settings{}},
		reg1{fn("hang", wrap(&gHang, func(ctx context.Context, args json.RawMessage) (Result, error) {
			<-ctx.Done() // hangs until the deadline
			return Result{}, ctx.Err()
		})), Settings{Timeout: 10 * time.Millisecond, Concurrency: 8}},
		reg1{fn("panics", wrap(&gPanic, func(ctx context.Context, args json.RawMessage) (Result, error) {
			panic("tool bug")
		})), Settings{}},
		reg1{fn("proc", wrap(&gProc, func(ctx context.Context, args json.RawMessage) (Result, error) {
			// A hung child process: killed with its group at the deadline.
			cmd := exec.CommandContext(ctx, sleepBin, "30")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 10 * time.Millisecond
			err := cmd.Run()
			if ctx.Err() != nil {
				return Result{}, ctx.Err()
			}
			return Result{}, err
		})), Settings{Timeout: 30 * time.Millisecond, Concurrency: 4}},
	)
	ex := NewExecutor(reg, ExecutorOptions{GlobalLimit: globalLimit, Logger: quiet})

	goroutinesBefore := runtime.NumGoroutine()
	procsBefore := proctest.Descendants(os.Getpid())

	pick := func(i int) (string, string) {
		switch {
		case i%100 == 17:
			return "proc", ClassTimeout
		case i%20 == 14 || i%20 == 15:
			return "hang", ClassTimeout
		case i%50 == 16:
			return "panics", ClassPanic
		case i%20 >= 10:
			return "fast", ""
		}
		return "calc", ""
	}
	results := make([]string, calls)
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(callers)
	for i := 0; i < calls; i++ {
		g.Go(func() error {
			name, _ := pick(i)
			c := Call{Name: name, Arguments: json.RawMessage(`{}`)}
			if name == "calc" {
				c.Arguments = json.RawMessage(fmt.Sprintf(`{"expression":"%d * 3"}`, i))
			}
			r := ex.Execute(ctx, c)
			results[i] = r.ErrorClass
			if name == "calc" && r.Content != fmt.Sprint(i*3) {
				return fmt.Errorf("call %d: calc gave %+v", i, r)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for i, class := range results {
		name, want := pick(i)
		if class != want {
			t.Fatalf("call %d (%s) ended with class %q, want %q", i, name, class, want)
		}
		counts[name]++
	}
	st := ex.Stats()
	t.Logf("calls per tool %v; executor stats %+v; peaks: all %d calc %d hang %d proc %d",
		counts, st, gAll.peak.Load(), gCalc.peak.Load(), gHang.peak.Load(), gProc.peak.Load())
	if st.Calls != calls || st.PeakInFlight > globalLimit || gAll.peak.Load() > globalLimit {
		t.Errorf("global limit %d: executor peak %d, measured peak %d, calls %d", globalLimit, st.PeakInFlight, gAll.peak.Load(), st.Calls)
	}
	if gCalc.peak.Load() > 16 || gHang.peak.Load() > 8 || gProc.peak.Load() > 4 {
		t.Errorf("per-tool limits exceeded: calc %d/16 hang %d/8 proc %d/4", gCalc.peak.Load(), gHang.peak.Load(), gProc.peak.Load())
	}
	if st.Timeouts != int64(counts["hang"]+counts["proc"]) || st.Panics != int64(counts["panics"]) {
		t.Errorf("stats %+v, want %d timeouts and %d panics", st, counts["hang"]+counts["proc"], counts["panics"])
	}
	if err := proctest.WaitDescendants(os.Getpid(), procsBefore, 10*time.Second); err != nil {
		t.Error(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > goroutinesBefore && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutinesBefore {
		t.Errorf("%d goroutines after the run, %d before", n, goroutinesBefore)
	}
	if st := ex.Stats(); st.InFlight != 0 {
		t.Errorf("%d calls still in flight", st.InFlight)
	}
}
