package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/sink"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// failingSink fails every write.
type failingSink struct{ sink.MemorySink }

func (*failingSink) WriteGroup(context.Context, *traj.Group) (bool, error) {
	return false, errors.New("disk full")
}

// TestAsyncToolCallsEndWithRun: when a run fails (here its sink) while an
// async tool call is still running, Run cancels the call and waits for its
// goroutine before it closes the tools and returns; before, the call ran on
// to its timeout after Run had returned, against a closed registry.
func TestAsyncToolCallsEndWithRun(t *testing.T) {
	model := tinyPolicy(t)
	job := tinyJob(model, writePrompts(t, 3), filepath.Join(t.TempDir(), "unused.jsonl"))
	job.GroupSize = setting.Of(2)
	job.AsyncTools = setting.Of(true)
	var (
		mu      sync.Mutex
		blocked []context.Context
		calls   atomic.Int32
	)
	reg := tools.NewRegistry()
	err := reg.Register(&tools.Func{ToolName: "wait", ToolDescription: "the first call waits for its context",
		Fn: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			if calls.Add(1) > 1 {
				return tools.Result{Content: "1"}, nil
			}
			mu.Lock()
			blocked = append(blocked, ctx)
			mu.Unlock()
			<-ctx.Done()
			return tools.Result{}, ctx.Err()
		}}, tools.Settings{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, err = quietRun(t, context.Background(), job, RunOptions{Sink: &failingSink{}, Hooks: Hooks{
		Tools:    reg,
		Pauses:   &PauseSchedule{Interval: func(int) int { return 2 }, Call: tools.Call{Name: "wait", Arguments: json.RawMessage(`{}`), Raw: "[WAIT]", Form: tools.FormBracket}},
		Sampling: func(s *actor.Sampling) { s.EOS = []int32{} },
	}})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v, want the sink's error", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(blocked) != 1 {
		t.Fatalf("%d blocked calls, want 1", len(blocked))
	}
	if blocked[0].Err() == nil {
		t.Fatal("Run returned while a tool call was still running (its context not cancelled)")
	}
}
