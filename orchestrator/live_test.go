package orchestrator

import (
	"context"
	"testing"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/internal/tinymodel"
)

// Live's step latencies span the engines of a run: once the runner
// publishes a new engine (a hot reload), the old one's steps stay counted
// and the new one's are added; the batch figures are the engine's now.
func TestLiveStepsSpanEngines(t *testing.T) {
	pol, err := actor.Load(context.Background(), actor.LoadOptions{Dir: tinymodel.Write(t, 3, nil), IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pol.Close()
	step := func(e *actor.Engine, n int) {
		t.Helper()
		for range n {
			if _, err := e.Step(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	newEngine := func() *actor.Engine {
		e := actor.NewEngine(pol, actor.EngineOptions{MaxBatch: 4})
		if _, err := e.AddGroup(actor.GroupRequest{ID: "g", Prompt: []int32{1, 2, 3}, Seeds: []uint64{1, 2, 3},
			Sampling: actor.Sampling{Temperature: 1, MaxNewTokens: 50}}); err != nil {
			t.Fatal(err)
		}
		return e
	}
	live := NewLive()
	s := newSummary("j")
	first := newEngine()
	step(first, 4)
	live.set(s.clone(), nil, first)
	step(first, 2) // after its last publish: still counted when the next engine is published
	second := newEngine()
	defer second.Close()
	first.Close()
	step(second, 3)
	live.set(s.clone(), nil, second)
	eng, ok := live.Engine()
	want := first.Stats().StepLatency
	want.Add(second.Stats().StepLatency)
	if !ok || eng.Steps != want || want.Count != uint64(first.Stats().Steps+second.Stats().Steps) || want.Count != 9 {
		t.Errorf("steps %+v, want %+v (engines' steps %d + %d)", eng.Steps, want, first.Stats().Steps, second.Stats().Steps)
	}
	if eng.Running != second.Running() || eng.Queued != second.Queued() || eng.Running == 0 {
		t.Errorf("running %d queued %d, the engine's %d and %d", eng.Running, eng.Queued, second.Running(), second.Queued())
	}
}
