package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// The workloads of toolrl bench actor. Plain decoding is measured on the
// actor's engine directly (the library's API: no tool calls, so no rollout
// loop is involved); every workload with tool calls runs through the
// orchestrator's runner (orchestrator.Run with Hooks), the loop toolrl
// rollout and toolrl train use, so that its figures are the rollout's.

// benchText is the benchmark's prompt and tool-result text: bytes
// 'a' + 7i mod 26. Under benchFormat each byte is one token id, so the ids
// are those the transformers.js peers (scripts/actor/peer*.mjs) use.
func benchText(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + (i*7)%26)
	}
	return string(b)
}

// benchIDs is benchText(n) as token ids.
func benchIDs(n int) []int32 { return byteIDs(benchText(n)) }

func byteIDs(s string) []int32 {
	ids := make([]int32, len(s))
	for i := 0; i < len(s); i++ {
		ids[i] = int32(s[i])
	}
	return ids
}

// benchPauseInterval is the tool-use workload's call interval: sample i of a
// group (0-based) completes a call after every pauseEvery + i%4 sampled
// tokens, staggered so that a group's samples do not pause in lockstep. The
// transformers.js peer (scripts/actor/peer_tools.mjs) follows the same
// schedule.
func benchPauseInterval(pauseEvery, sample int) int { return pauseEvery + sample%4 }

// benchPausePoints lists the sampled-token counts after which sample i of a
// group that samples newTokens tokens pauses, gets the injected tokens
// prefilled and resumes: the multiples of benchPauseInterval below
// newTokens. A call completed by the newTokens-th token also gets its tokens
// injected (they end the trajectory) but nothing more is run, so it is not
// listed.
func benchPausePoints(pauseEvery, sample, newTokens int) []int {
	if pauseEvery <= 0 {
		return nil
	}
	n := benchPauseInterval(pauseEvery, sample)
	var pts []int
	for t := n; t < newTokens; t += n {
		pts = append(pts, t)
	}
	return pts
}

// benchFormat is the runner's format for the benchmark: every byte of a
// prompt's text and of a tool result is one token id, with no markup, so the
// measured workload is exactly benchText's ids.
type benchFormat struct{}

func (benchFormat) Name() string     { return "bench" }
func (benchFormat) CallForm() string { return tools.FormBracket }
func (benchFormat) TurnCalls() bool  { return false }

func (benchFormat) PromptTokens(p *prompt.Prompt) ([]int32, error) {
	return byteIDs(p.Prompt), nil
}

func (benchFormat) Injection(results []traj.ToolResult) (orchestrator.ToolTurn, error) {
	var turn orchestrator.ToolTurn
	for _, r := range results {
		turn.Text += r.Content
		turn.IDs = append(turn.IDs, byteIDs(r.Content)...)
		turn.Ends = append(turn.Ends, len(turn.IDs))
	}
	return turn, nil
}

// benchToolName is the simulated tool; it returns a fixed result at once.
const benchToolName = "bench_echo"

func benchRegistry(result string) (*tools.Registry, error) {
	reg := tools.NewRegistry()
	err := reg.Register(&tools.Func{ToolName: benchToolName, ToolDescription: "Returns a fixed text (toolrl bench actor).",
		Fn: func(context.Context, json.RawMessage) (tools.Result, error) {
			return tools.Result{Content: result}, nil
		}}, tools.Settings{})
	return reg, err
}

// throughputOptions describes one measurement: groups of groupSize samples
// of one benchText prompt, at most concurrency sequences decoded together,
// each sampling exactly newTokens tokens (temperature 1, top-k 50, EOS ids
// ignored). With pauseEvery > 0, sample i pauses after every
// benchPauseInterval(pauseEvery, i) sampled tokens and gets injectTokens
// tokens (benchText) each time.
type throughputOptions struct {
	concurrency, sequences, groupSize int
	promptLen, newTokens              int
	jobSeed                           uint64
	pauseEvery, injectTokens          int
}

func (o *throughputOptions) defaults() {
	o.sequences = max(o.sequences, o.concurrency)
	if o.groupSize <= 0 {
		o.groupSize = min(8, o.concurrency)
	}
}

// throughputResult is what a measurement saw.
type throughputResult struct {
	generated int64 // tokens sampled
	// pauses counts the calls after which a sequence resumed.
	pauses int64
	wall   time.Duration // from the first group admitted to the last event
	stats  actor.Stats
}

func (r throughputResult) tokensPerSecond() float64 { return float64(r.generated) / r.wall.Seconds() }

// overhead is the fraction of wall time spent outside ONNX Runtime's Run.
func (r throughputResult) overhead() float64 {
	return float64(r.wall-r.stats.RunTime) / float64(r.wall)
}

// benchSampling is the benchmark's decoding: temperature 1, top-k 50, EOS
// ids ignored and exactly newTokens tokens sampled per sequence.
func benchSampling(newTokens int) actor.Sampling {
	return actor.Sampling{Temperature: 1, TopK: 50, MaxSampledTokens: newTokens, EOS: []int32{}}
}

// measureDecoding measures plain decoding (no tool calls) on a fresh engine
// of pol: raw engine throughput, what BENCHMARKS.md's plain rows report.
func measureDecoding(ctx context.Context, pol *actor.Policy, o throughputOptions) (throughputResult, error) {
	o.defaults()
	var res throughputResult
	eng := actor.NewEngine(pol, actor.EngineOptions{MaxBatch: o.concurrency})
	defer eng.Close()
	start := time.Now()
	prompt := benchIDs(o.promptLen)
	for g := 0; g*o.groupSize < o.sequences; g++ {
		n := min(o.groupSize, o.sequences-g*o.groupSize)
		id := fmt.Sprint("bench-", g)
		seeds := make([]uint64, n)
		for i := range seeds {
			seeds[i] = actor.SampleSeed(o.jobSeed, id, i)
		}
		if _, err := eng.AddGroup(actor.GroupRequest{ID: id, Prompt: prompt, Seeds: seeds, Sampling: benchSampling(o.newTokens)}); err != nil {
			return res, err
		}
	}
	for !eng.Idle() {
		if _, err := eng.Step(ctx); err != nil {
			return res, err
		}
	}
	res.wall = time.Since(start)
	res.stats = eng.Stats()
	res.generated = res.stats.SampledTokens
	return res, nil
}

// benchRun drives one tool-use workload through the orchestrator's runner:
// a warm-up group first (ONNX Runtime's first-run allocations; not
// measured), then the measured groups. It times from handing out the first
// measured prompt to writing the last measured group, and takes the engine's
// counters over the same span. onGroup, when set, sees every measured group
// as it is written (on the runner's goroutine).
type benchRun struct {
	warmup   []prompt.Prompt
	measured []prompt.Prompt
	onGroup  func(g *traj.Group)
	onWarm   func()

	eng         *actor.Engine
	next        int
	warmupDone  int
	written     int
	start       time.Time
	startStats  actor.Stats
	res         throughputResult
	measuredIDs map[string]bool
}

// Next implements prompt.Feed: the warm-up groups, then (once
// they are written) the measured ones.
func (b *benchRun) Next(ctx context.Context, block bool) (prompt.Prompt, bool, error) {
	switch {
	case b.next < len(b.warmup):
		b.next++
		return b.warmup[b.next-1], true, nil
	case b.warmupDone < len(b.warmup):
		return prompt.Prompt{}, false, nil // not exhausted: the runner blocks only with nothing in flight
	case b.next-len(b.warmup) < len(b.measured):
		if b.next == len(b.warmup) {
			if b.onWarm != nil {
				b.onWarm()
			}
			b.start, b.startStats = time.Now(), b.eng.Stats()
		}
		b.next++
		return b.measured[b.next-1-len(b.warmup)], true, nil
	}
	return prompt.Prompt{}, false, nil
}

// Done implements prompt.Feed.
func (b *benchRun) Done(context.Context, prompt.Prompt) error { return nil }

// Resume implements sink.Sink.
func (b *benchRun) Resume(context.Context) (map[string]bool, error) { return nil, nil }

// WriteGroup implements sink.Sink: it counts the measured groups'
// resumed pauses and closes the measurement with the last one.
func (b *benchRun) WriteGroup(_ context.Context, g *traj.Group) (bool, error) {
	if !b.measuredIDs[g.PromptID] {
		b.warmupDone++
		return true, nil
	}
	for i := range g.Trajectories {
		t := &g.Trajectories[i]
		response := len(t.Tokens) - t.PromptLen
		for _, s := range t.Segments {
			if s.Kind == traj.SegmentTool && s.End < response {
				b.res.pauses++
			}
		}
	}
	if b.onGroup != nil {
		b.onGroup(g)
	}
	b.written++
	if b.written == len(b.measured) {
		b.res.wall = time.Since(b.start)
		st := b.eng.Stats()
		b.res.stats = subStats(st, b.startStats)
		b.res.generated = b.res.stats.SampledTokens
	}
	return true, nil
}

// Close implements sink.Sink.
func (b *benchRun) Close() error { return nil }

// subStats is the engine's counters between two snapshots.
func subStats(a, b actor.Stats) actor.Stats {
	return actor.Stats{
		Steps: a.Steps - b.Steps, DecodeRuns: a.DecodeRuns - b.DecodeRuns, PrefillRuns: a.PrefillRuns - b.PrefillRuns,
		Repacks: a.Repacks - b.Repacks, InPlaceRepacks: a.InPlaceRepacks - b.InPlaceRepacks,
		SampledTokens: a.SampledTokens - b.SampledTokens, PrefillTokens: a.PrefillTokens - b.PrefillTokens,
		RowSteps: a.RowSteps - b.RowSteps, RunTime: a.RunTime - b.RunTime, StepTime: a.StepTime - b.StepTime,
	}
}

// runnerWorkload is a tool-use workload for measureRunner.
type runnerWorkload struct {
	model   string
	threads int
	throughputOptions
	// interval overrides benchPauseInterval (the RSS run pauses every 3
	// tokens, unstaggered).
	interval func(sample int) int
	// warmupGroups are sampled before the measured groups (default 1).
	warmupGroups int
	onGroup      func(g *traj.Group)
	// onWarm is called once the warm-up groups are written, before the
	// measured ones start.
	onWarm func()
}

// measureRunner runs w through orchestrator.Run: the model folder loaded
// as a rollout loads it, the simulated calls detected by the runner's call
// detector (PauseSchedule), executed by its tool executor (a tool that
// returns benchText(injectTokens)) and injected by its runner; the groups go
// to a sink that only counts them.
func measureRunner(ctx context.Context, w runnerWorkload) (throughputResult, error) {
	w.defaults()
	if w.sequences%w.groupSize != 0 {
		return throughputResult{}, fmt.Errorf("bench: %d sequences are not whole groups of %d", w.sequences, w.groupSize)
	}
	interval := w.interval
	if interval == nil {
		interval = func(i int) int { return benchPauseInterval(w.pauseEvery, i) }
	}
	reg, err := benchRegistry(benchText(w.injectTokens))
	if err != nil {
		return throughputResult{}, err
	}
	if w.warmupGroups == 0 {
		w.warmupGroups = 1
	}
	b := &benchRun{onGroup: w.onGroup, onWarm: w.onWarm, measuredIDs: map[string]bool{}}
	text := benchText(w.promptLen)
	for g := 0; g < w.warmupGroups; g++ {
		b.warmup = append(b.warmup, prompt.Prompt{ID: fmt.Sprint("warmup-", g), Prompt: text})
	}
	for g := 0; g < w.sequences/w.groupSize; g++ {
		id := fmt.Sprint("bench-", g)
		b.measured = append(b.measured, prompt.Prompt{ID: id, Prompt: text})
		b.measuredIDs[id] = true
	}
	no := false
	// Every sampled token may end a turn, and every turn a call.
	turns := w.newTokens + 1
	job := orchestrator.Job{
		ID: setting.Of("bench"), Model: setting.Of(w.model), Prompts: setting.Of("(bench actor: synthetic prompts)"), GroupSize: setting.Of(w.groupSize), Seed: setting.Of(w.jobSeed),
		Batch: setting.Of(w.concurrency), Threads: setting.Of(w.threads), Resume: setting.Of(no),
		Limits: orchestrator.Limits{MaxTurns: setting.Of(turns), MaxToolCalls: setting.Of(turns), MaxToolCallsPerTurn: setting.Of(1),
			MaxTokens: setting.Of(w.newTokens + turns*w.injectTokens)},
	}
	hooks := orchestrator.Hooks{
		Format: benchFormat{},
		Tools:  reg,
		Pauses: &orchestrator.PauseSchedule{Interval: interval,
			Call: tools.Call{Name: benchToolName, Arguments: json.RawMessage(`{}`), Raw: "[bench]", Form: tools.FormBracket}},
		Sampling: func(s *actor.Sampling) { *s = benchSampling(w.newTokens) },
		Engine:   func(e *actor.Engine) { b.eng = e },
	}
	_, err = orchestrator.Run(ctx, job, orchestrator.RunOptions{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ProgressOut: io.Discard,
		Feed: b, Sink: b, Hooks: hooks,
	})
	if err != nil {
		return b.res, fmt.Errorf("bench %s: %w", w.model, err)
	}
	if b.written != len(b.measured) {
		return b.res, fmt.Errorf("bench %s: %d of %d groups written", w.model, b.written, len(b.measured))
	}
	return b.res, nil
}
