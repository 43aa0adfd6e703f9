package orchestrator

import (
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/internal/metricsserver"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/tools"
)

// Live holds a running rollout's latest figures for readers on other
// goroutines (a Prometheus scrape, NewCollector): the runner publishes a copy
// of its Summary, with the worker's feed stats, at every turn of its loop and
// once more when the run ends; the tool executor's Stats are read at the
// moment of the Snapshot. Pass one in RunOptions.Live. Safe for concurrent
// use.
type Live struct {
	mu   sync.Mutex
	sum  *Summary
	exec *tools.Executor
	eng  EngineFigures
	// engine is the engine last published and closedSteps the step
	// latencies of the engines before it (hot reloads make a new one).
	engine      *actor.Engine
	closedSteps actor.StepLatency
}

// EngineFigures are the actor engine's figures at a Live's last publish.
type EngineFigures struct {
	// Running and Queued count the sequences in the decode batch and those
	// waiting for a batch slot.
	Running, Queued int
	// Steps are the wall times of the engine steps that ran the model, over
	// every engine of the run.
	Steps actor.StepLatency
}

// NewLive returns a Live with nothing published yet.
func NewLive() *Live { return &Live{} }

// ServeLive serves a run's Prometheus /metrics (NewCollector over a new
// Live, with the process collectors and build) and /healthz on listen
// while the run lasts: pass the Live as RunOptions.Live and Close the
// server when the run is over.
func ServeLive(listen string, build metricsserver.Build, logger *slog.Logger) (*Live, *metricsserver.Server, error) {
	live := NewLive()
	reg := metricsserver.NewRegistry(build)
	reg.MustRegister(NewCollector(live))
	srv, err := metricsserver.Start(listen, metricsserver.Handler(reg, nil), logger)
	if err != nil {
		return nil, nil, err
	}
	return live, srv, nil
}

// Snapshot returns the summary last published and the tool executor's stats
// now; ok is false until the run has opened its model and tools. The
// summary's maps and slices are the snapshot's own: read them, do not
// change them.
func (l *Live) Snapshot() (s Summary, tools tools.ExecutorStats, ok bool) {
	s, tools, _, ok = l.snapshot()
	return s, tools, ok
}

// Engine returns the engine's figures last published; ok is false until
// the run has opened its model.
func (l *Live) Engine() (EngineFigures, bool) {
	_, _, eng, ok := l.snapshot()
	return eng, ok
}

func (l *Live) snapshot() (s Summary, tools tools.ExecutorStats, eng EngineFigures, ok bool) {
	l.mu.Lock()
	sum, exec, eng := l.sum, l.exec, l.eng
	l.mu.Unlock()
	if sum == nil {
		return Summary{}, tools, EngineFigures{}, false
	}
	if exec != nil {
		tools = exec.Stats()
	}
	return *sum, tools, eng, true
}

// set publishes s (the runner's copy), the executor and the engine's
// figures; it runs on the engine's owner, the runner's goroutine.
func (l *Live) set(s *Summary, exec *tools.Executor, eng *actor.Engine) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sum, l.exec = s, exec
	if eng == nil {
		return
	}
	if l.engine != nil && l.engine != eng {
		// A hot reload closed the engine last published; the runner
		// published just before it (the loop's top), so its figures are
		// complete.
		l.closedSteps.Add(l.engine.Stats().StepLatency)
	}
	l.engine = eng
	steps := l.closedSteps
	steps.Add(eng.Stats().StepLatency)
	l.eng = EngineFigures{Running: eng.Running(), Queued: eng.Queued(), Steps: steps}
}

// publish copies the summary into RunOptions.Live, if any. It runs on the
// runner's goroutine, the only one that touches the summary and the feed.
func (r *runner) publish() {
	if r.opts.Live == nil {
		return
	}
	s := r.summary.clone()
	if feed, ok := r.feed.(*prompt.RedisFeed); ok {
		st := feed.Stats()
		s.Worker = &st
	}
	r.opts.Live.set(s, r.exec, r.eng)
}

// clone copies s deeply enough that later changes to s do not show.
func (s *Summary) clone() *Summary {
	c := *s
	c.Calls = maps.Clone(s.Calls)
	c.Finish = maps.Clone(s.Finish)
	c.ToolCalls = make(map[string]map[string]int, len(s.ToolCalls))
	for tool, byOutcome := range s.ToolCalls {
		c.ToolCalls[tool] = maps.Clone(byOutcome)
	}
	c.VersionsLoaded = slices.Clone(s.VersionsLoaded)
	c.VersionsRefused = slices.Clone(s.VersionsRefused)
	if s.Worker != nil {
		w := *s.Worker
		c.Worker = &w
	}
	return &c
}

// setTools names the registry's tools: calls of other names are counted in
// ToolCalls under "unknown".
func (s *Summary) setTools(names []string) {
	s.toolNames = make(map[string]bool, len(names))
	for _, n := range names {
		s.toolNames[n] = true
	}
}

// countToolCall counts a call of the named tool with outcome in ToolCalls.
func (s *Summary) countToolCall(name, outcome string) {
	if s.toolNames != nil && !s.toolNames[name] || name == "" {
		name = "unknown"
	}
	if s.ToolCalls == nil {
		s.ToolCalls = map[string]map[string]int{}
	}
	if s.ToolCalls[name] == nil {
		s.ToolCalls[name] = map[string]int{}
	}
	s.ToolCalls[name][outcome]++
}
