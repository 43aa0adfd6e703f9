package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// RunOptions are the parts of a run that are not the job: where progress
// goes, and overrides for the prompt feed and the sink (distributed workers
// and tests use them).
type RunOptions struct {
	Logger *slog.Logger
	// ProgressOut receives the progress bar or lines (default os.Stderr).
	ProgressOut io.Writer
	// Feed overrides reading job.Prompts.
	Feed PromptFeed
	// Sink overrides opening job.Out.
	Sink Sink
	// Abort, once closed, abandons in-flight groups at once (the second
	// Ctrl-C). Cancelling Run's ctx only stops taking new prompts and lets
	// in-flight groups finish. nil: never.
	Abort <-chan struct{}
	// Iteration is set on every prompt read from job.Prompts (Prompt.Iteration):
	// the closed loop runs the same job once per iteration, and each run
	// samples every prompt as a new group, job/prompt@Iteration (0, the
	// default, is a plain rollout: job/prompt). Prompts from Feed carry
	// their own iteration. ≥ 0.
	Iteration int
	// Policy, when set, is polled between groups for a newer policy version
	// than the loaded one (hot reload): the runner stops admitting groups,
	// lets those in flight finish on the old version, verifies and loads the
	// new one and stamps its number on every later trajectory. It also opens
	// the gate of prompts that need a newer version (Prompt.MinPolicyVersion).
	// nil: the job's model is used for the whole run, and a prompt that needs
	// a newer version than job.PolicyVersion is an error.
	Policy PolicySource
	// PolicyPoll is the least time between two polls of Policy (default
	// 200 ms); a prompt that needs a newer version polls at once.
	PolicyPoll time.Duration
	// Hooks replace the format, tools, call detection or sampling settings
	// for a synthetic workload (benchmarks); the zero value changes nothing.
	Hooks Hooks
	// Live, when set, receives a copy of the summary at every turn of the
	// loop and at the end, for readers on other goroutines (toolrl rollout
	// --listen serves it as Prometheus metrics, NewCollector).
	Live *Live
}

// PromptFeed hands prompts to the runner.
type PromptFeed interface {
	// Next returns the next prompt. With block false it returns at once
	// (ok false when none is ready); with block true it may wait. ok false
	// with a nil error and block true means the feed is exhausted.
	Next(ctx context.Context, block bool) (p Prompt, ok bool, err error)
	// Done is called once the prompt's group is durably written, or found
	// already written (resume, a prompt fed twice).
	Done(ctx context.Context, p Prompt) error
}

// PromptRefuser is implemented by a PromptFeed that must hear of the prompts
// the runner refuses: prompts it can never sample (their tokens leave no
// room under the model's context). The runner calls Refuse instead of Done,
// with why, e.g. "prompt 2100 tokens, context 2048", and goes on with the
// other prompts; the feed must not hand p out again (RedisFeed dead-letters
// it). A feed without Refuse simply never sees p again (PromptList hands
// out each prompt once).
type PromptRefuser interface {
	Refuse(ctx context.Context, p Prompt, reason string) error
}

// groupRun is one prompt's group in flight.
type groupRun struct {
	prompt Prompt
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
	sink     Sink
	feed     PromptFeed
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
	held        *Prompt
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
	if job.Batch < job.GroupSize {
		return nil, fmt.Errorf("batch: %d is smaller than group_size %d; a group is decoded together", job.Batch, job.GroupSize)
	}
	if opts.Iteration < 0 {
		return nil, fmt.Errorf("iteration: %d, want ≥ 0", opts.Iteration)
	}
	if opts.PolicyPoll <= 0 {
		opts.PolicyPoll = defaultPolicyPoll
	}
	r := &runner{job: job, opts: opts, log: opts.Logger, summary: newSummary(job.ID), seen: map[string]bool{},
		bySeq: map[*actor.Sequence]*sampleRun{}, correct: map[*sampleRun]bool{},
		toolDone: make(chan toolOutcome, 4*job.Batch), toolStop: make(chan struct{}),
		version: job.PolicyVersion, refused: map[int64]bool{}}
	r.summary.PolicyVersion = job.PolicyVersion
	r.summary.Watching = opts.Policy != nil
	defer r.close()
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	err := r.loop(ctx)
	r.progress.Finish()
	r.summary.Wall = time.Since(start)
	r.summary.DecodeWall = r.decodeWall + r.eng.Stats().StepTime
	if feed, ok := r.feed.(*RedisFeed); ok {
		stats := feed.Stats()
		r.summary.Worker = &stats
	}
	if ctx.Err() != nil {
		r.summary.Interrupted = true
	}
	r.publish()
	if cerr := r.sink.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close sink %s: %w", DisplayOut(job.Out), cerr)
	}
	r.sink = nil
	return r.summary, err
}

func (r *runner) open(ctx context.Context) error {
	job := r.job
	var err error
	r.pol, err = actor.Load(ctx, actor.LoadOptions{Dir: job.Model, Provider: job.Provider, IntraOpThreads: job.Threads})
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if job.RefModel != "" {
		r.ref, err = actor.Load(ctx, actor.LoadOptions{Dir: job.RefModel, Provider: job.Provider, IntraOpThreads: job.Threads})
		if err != nil {
			return fmt.Errorf("ref_model: %w", err)
		}
	}
	r.model, err = modelRef(job.Model, r.pol)
	if err != nil {
		return err
	}
	if r.opts.Policy != nil {
		if r.tokenizerHash, err = fileSHA256(filepath.Join(job.Model, "tokenizer.json")); err != nil {
			return fmt.Errorf("model: %w", err)
		}
	}
	if err := r.openTools(ctx); err != nil {
		return err
	}
	r.summary.setTools(r.registry.Names())
	if r.format, err = r.openFormat(); err != nil {
		return err
	}
	if lim := MaxCallsPerTurn(r.format); lim > 0 && lim < r.job.Limits.MaxToolCallsPerTurn {
		// The template renders no more calls per turn: more could not be
		// shown to the model as the conversation it sees at inference.
		r.log.Info("per-turn call cap lowered to the chat template's", "max_tool_calls_per_turn", lim, "job", r.job.Limits.MaxToolCallsPerTurn)
		r.job.Limits.MaxToolCallsPerTurn = lim
		r.exec = r.newExecutor()
	}
	// Normalize resolved the job's sampling (flag > job > the model folder's
	// generation_config.json > default); max_tokens bounds the whole
	// response, injections included, also while sampling.
	r.sampling = job.Sampling
	r.sampling.MaxResponseTokens = job.Limits.MaxTokens
	r.summary.Sampling = job.SamplingReport()
	if h := r.opts.Hooks.Sampling; h != nil {
		h(&r.sampling)
	}
	if err := r.sampling.Validate(); err != nil {
		return err
	}

	r.feed = r.opts.Feed
	var prompts []Prompt
	if r.feed == nil {
		set, err := ReadPrompts(job.Prompts, job.Limit, job.SkipInvalid)
		if err != nil {
			return fmt.Errorf("prompts: %w", err)
		}
		for _, s := range set.Skipped {
			r.log.Warn("skipped malformed prompt line", "file", s.File, "line", s.Line, "error", s.Err)
		}
		r.summary.PromptsSkipped = len(set.Skipped)
		r.summary.PromptsTotal = len(set.Prompts)
		prompts = set.Prompts
		for i := range prompts {
			prompts[i].Iteration = r.opts.Iteration
		}
	}
	if r.sink, err = r.openSink(ctx); err != nil {
		return err
	}
	if err := r.checkSettings(ctx); err != nil {
		return err
	}
	if *job.Resume {
		// Resume keys by the versioned group id, so a rerun of iteration k
		// skips k's written groups only. It applies to fed prompts too (the
		// file sinks also need Resume before appending: it cuts a
		// half-written group, and the Parquet sink keeps the old groups).
		if r.done, err = r.sink.Resume(ctx); err != nil {
			return fmt.Errorf("resume from %s: %w", DisplayOut(job.Out), err)
		}
	}
	// The progress total: unknown (-1) for a feed such as a worker's, which
	// hands out prompts as they come.
	total := -1
	if list, ok := r.feed.(*PromptList); ok {
		total = len(list.Prompts)
	}
	if r.feed == nil {
		kept := prompts[:0:0]
		for _, p := range prompts {
			if r.done[r.groupID(p)] {
				r.summary.GroupsResumed++
				continue
			}
			kept = append(kept, p)
		}
		r.feed = &PromptList{Prompts: kept}
		total = len(kept)
	}
	r.progress = NewProgress(r.opts.ProgressOut, total, r.log)
	r.eng = actor.NewEngine(r.pol, actor.EngineOptions{MaxBatch: job.Batch})
	if h := r.opts.Hooks.Engine; h != nil {
		h(r.eng)
	}
	return nil
}

func (r *runner) openSink(ctx context.Context) (Sink, error) {
	if r.opts.Sink != nil {
		return r.opts.Sink, nil
	}
	return OpenSink(ctx, r.job.Out, r.job.ID, !*r.job.Resume)
}

// openTools loads the registry: the job's tools file, else the model
// folder's tools.yaml, else none (every call is then an unknown tool).
func (r *runner) openTools(ctx context.Context) error {
	path := toolsFile(r.job)
	switch {
	case r.opts.Hooks.Tools != nil:
		r.registry = r.opts.Hooks.Tools
	case path == "":
		r.registry = tools.NewRegistry()
	default:
		reg, err := tools.LoadRegistry(ctx, path)
		if err != nil {
			return fmt.Errorf("tools: %w", err)
		}
		r.registry = reg
	}
	r.exec = r.newExecutor()
	return nil
}

// newExecutor makes the executor of the run's registry under the job's limits.
func (r *runner) newExecutor() *tools.Executor {
	tok := r.pol.Tokenizer()
	return tools.NewExecutor(r.registry, tools.ExecutorOptions{
		GlobalLimit:           r.job.ToolConcurrency,
		MaxCallsPerTurn:       r.job.Limits.MaxToolCallsPerTurn,
		MaxCallsPerTrajectory: *r.job.Limits.MaxToolCalls,
		NoCalls:               *r.job.Limits.MaxToolCalls == 0,
		Logger:                r.log,
		CountTokens: func(s string) int {
			ids, err := tok.Encode(s, false)
			if err != nil {
				return tools.EstimateTokens(s)
			}
			return len(ids)
		},
	})
}

func (r *runner) openFormat() (Format, error) {
	if r.opts.Hooks.Format != nil {
		return r.opts.Hooks.Format, nil
	}
	job := r.job
	return OpenFormat(job.Model, r.pol.Tokenizer(), FormatOptions{
		Format: job.Format, ToolCallFormat: job.ToolCallFormat, System: job.SystemPrompt,
		Kwargs: job.ChatTemplateKwargs, Tools: r.registry.Specs(),
	})
}

func (r *runner) newParser() tools.Parser {
	switch r.format.CallForm() {
	case tools.FormHermes:
		return tools.NewHermesParser(r.registry, tools.ParserOptions{})
	case tools.FormLlama3JSON:
		return tools.NewLlama3Parser(r.registry, tools.ParserOptions{})
	case tools.FormMistral:
		return tools.NewMistralParser(r.registry, tools.ParserOptions{})
	}
	return tools.NewBracketParser(r.registry, tools.ParserOptions{})
}

func (r *runner) close() {
	close(r.toolStop)
	r.toolWG.Wait()
	if r.sink != nil {
		r.sink.Close()
	}
	if r.eng != nil {
		r.eng.Close()
	}
	if r.registry != nil {
		r.registry.Close()
	}
	if r.ref != nil {
		r.ref.Close()
	}
	if r.pol != nil {
		r.pol.Close()
	}
}

// modelRef names the model, hashes its ONNX file (and external data) and
// names its quantization, so trajectories record exactly which weights
// produced them.
func modelRef(dir string, pol *actor.Policy) (traj.ModelRef, error) {
	onnxPath := pol.ModelPath()
	h := sha256.New()
	for _, p := range []string{onnxPath, onnxPath + "_data", onnxPath + ".data"} {
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) && p != onnxPath {
			continue
		}
		if err != nil {
			return traj.ModelRef{}, fmt.Errorf("hash model: %w", err)
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return traj.ModelRef{}, fmt.Errorf("hash model %s: %w", p, err)
		}
	}
	abs, _ := filepath.Abs(dir)
	name := filepath.Base(abs)
	if name == policystore.QuantizedForm {
		// A version's quantized form is named by its version: v000003/quantized.
		name = filepath.Base(filepath.Dir(abs)) + "/" + name
	}
	return traj.ModelRef{Name: name, Hash: "sha256:" + hex.EncodeToString(h.Sum(nil)), Quantization: pol.Quantization()}, nil
}

// loop admits groups, steps the engine, runs tool calls and writes finished
// groups until the feed is exhausted (or ctx is cancelled) and nothing is in
// flight.
func (r *runner) loop(ctx context.Context) error {
	// Work beyond the batch keeps the engine busy while sequences wait on tools.
	maxInflight := 2 * r.job.Batch
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
		for !stopping && r.next == nil && r.inflight+r.job.GroupSize <= maxInflight {
			var p Prompt
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

// groupID is the id of p's group in this job: (job, prompt, iteration).
func (r *runner) groupID(p Prompt) string { return traj.GroupID(r.job.ID, p.ID, p.Iteration) }

// alreadyDone reports whether p's group was written before the run (resume)
// or was started earlier in it (a prompt fed twice), counting it and telling
// the feed it is done; such a prompt is not sampled again.
func (r *runner) alreadyDone(ctx context.Context, p Prompt) (bool, error) {
	id := r.groupID(p)
	switch {
	case r.done[id]:
		r.summary.GroupsResumed++
	case r.seen[id]:
		r.summary.GroupsDuplicate++
	default:
		return false, nil
	}
	if err := r.feed.Done(ctx, p); err != nil {
		return true, fmt.Errorf("mark prompt %s done: %w", p.Key(), err)
	}
	return true, nil
}

// startGroup queues p's group in the engine, or refuses p when its tokens
// leave no room under the model's context (refuse).
func (r *runner) startGroup(ctx context.Context, p Prompt) error {
	if err := p.checkIdentity(); err != nil {
		return fmt.Errorf("prompt %s (line %d): %w", p.ID, p.Line, err)
	}
	ids, err := r.format.PromptTokens(&p)
	if err != nil {
		return err
	}
	if limit := r.eng.MaxSeqLen(); len(ids) >= limit {
		// The engine would refuse it (AddGroup), and so would every rerun:
		// refuse this prompt alone rather than fail the job.
		return r.refuse(ctx, p, fmt.Sprintf("prompt %d tokens, context %d", len(ids), limit))
	}
	g := &groupRun{prompt: p, id: r.groupID(p), version: r.version, model: r.model}
	r.seen[g.id] = true
	// Seeds derive from the prompt's key: its id in iteration 0 (the seeds
	// of a plain rollout), id@k in iteration k, so each iteration samples
	// anew and none can take another prompt's seeds (ids have no '@').
	seeds := make([]uint64, r.job.GroupSize)
	for i := range seeds {
		seeds[i] = actor.SampleSeed(r.job.Seed, p.Key(), i)
	}
	detectors, err := r.newDetectors()
	if err != nil {
		return err
	}
	req := actor.GroupRequest{ID: g.id, Prompt: ids, Seeds: seeds, Sampling: r.sampling, NewDetector: detectors}
	if f := r.opts.Hooks.Forced; f != nil {
		for i := range seeds {
			req.Forced = append(req.Forced, f(i))
		}
	}
	seqs, err := r.eng.AddGroup(req)
	if err != nil {
		return fmt.Errorf("prompt %s (line %d): %w", p.ID, p.Line, err)
	}
	g.seqs = seqs
	for _, s := range seqs {
		d, ok := s.Detector().(*callDetector)
		if !ok {
			return fmt.Errorf("sequence %s/%d has no call detector", g.id, s.Index())
		}
		sr := &sampleRun{group: g, seq: s, detector: d, episode: r.exec.NewEpisode()}
		g.samples = append(g.samples, sr)
		r.bySeq[s] = sr
	}
	r.inflight += len(seqs)
	return nil
}

// refuse counts and logs a prompt the run can never sample and tells the
// feed (PromptRefuser), which drops it: RedisFeed dead-letters it with reason.
func (r *runner) refuse(ctx context.Context, p Prompt, reason string) error {
	r.summary.PromptsRefused++
	attrs := []any{"prompt", p.Key(), "reason", reason}
	if p.Line > 0 {
		attrs = append(attrs, "line", p.Line) // a prompts file's; a fed prompt has none
	}
	r.log.Warn("refused prompt", attrs...)
	if rf, ok := r.feed.(PromptRefuser); ok {
		if err := rf.Refuse(ctx, p, reason); err != nil {
			return fmt.Errorf("refuse prompt %s: %w", p.Key(), err)
		}
	}
	return nil
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
			if turn+1 >= r.job.Limits.MaxTurns {
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
	if r.job.AsyncTools {
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
		if !r.job.RecordLatency {
			o.results[i].LatencyMS = 0
		}
	}
	turn, err := r.format.Injection(o.results)
	if err != nil {
		return err
	}
	ids := turn.IDs
	at := sr.seq.Len() - sr.seq.PromptLen()
	if at+len(ids) > r.job.Limits.MaxTokens {
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

// end finishes a paused sequence for the given reason.
func (r *runner) end(ctx context.Context, sr *sampleRun, reason traj.FinishReason) error {
	sr.seq.Finish(reason)
	sr.finish = reason
	return r.finished(ctx, sr)
}

// finished marks a sample done and, when its whole group is, writes it.
func (r *runner) finished(ctx context.Context, sr *sampleRun) error {
	g := sr.group
	g.finished++
	if g.finished < len(g.samples) {
		return nil
	}
	group, correct, err := r.buildGroup(ctx, g)
	if err != nil {
		return err
	}
	written, err := r.sink.WriteGroup(ctx, &group)
	if err != nil {
		return fmt.Errorf("write group %s to %s: %w", g.id, DisplayOut(r.job.Out), err)
	}
	if err := r.feed.Done(ctx, g.prompt); err != nil {
		return fmt.Errorf("mark prompt %s done: %w", g.prompt.Key(), err)
	}
	sampledBefore := r.summary.SampledTokens
	if written {
		r.summary.addGroup(&group, correct)
	} else {
		r.summary.GroupsDuplicate++
	}
	sampled := r.summary.SampledTokens - sampledBefore
	r.progress.Advance(1, len(group.Trajectories), sampled)
	for _, s := range g.samples {
		delete(r.bySeq, s.seq)
	}
	r.inflight -= len(g.samples)
	return nil
}

// buildGroup turns a finished group's sequences into validated trajectories
// with rewards (and reference logprobs when a reference model is set).
func (r *runner) buildGroup(ctx context.Context, g *groupRun) (traj.Group, []bool, error) {
	out := make([]traj.Trajectory, len(g.samples))
	correct := make([]bool, len(g.samples))
	answer := g.prompt.AnswerText()
	for i, sr := range g.samples {
		s := sr.seq
		// The temperature the logprobs were computed at, an explicit 0 when
		// greedy: a learner recomputes them at it.
		temperature := r.sampling.Temperature
		t := traj.Trajectory{
			Schema: traj.TrajectorySchema, ID: traj.TrajectoryID(r.job.ID, g.prompt.ID, g.prompt.Iteration, s.Index()),
			JobID: r.job.ID, PromptID: g.prompt.ID, Iteration: g.prompt.Iteration, GroupID: g.id, GroupSize: len(g.samples),
			SampleIndex: s.Index(), PolicyVersion: g.version, Seed: s.Seed(), Temperature: &temperature, Model: g.model,
			Tokens: s.Tokens(), PromptLen: s.PromptLen(), LossMask: s.LossMask(), Logprobs: s.Logprobs(),
			Segments: r.attachCalls(s, s.Segments(), sr.calls), FinishReason: sr.finish,
			Answer: answer, Meta: g.prompt.Meta,
		}
		if t.FinishReason == "" {
			t.FinishReason = s.FinishReason()
		}
		correct[i] = r.job.Rewards.Score(&t, answer)
		out[i] = t
	}
	if r.ref != nil {
		if err := r.scoreRef(ctx, out); err != nil {
			return traj.Group{}, nil, err
		}
	}
	group := traj.NewGroup(out)
	if err := group.Validate(); err != nil {
		return traj.Group{}, nil, fmt.Errorf("built an invalid group (a bug in toolrl): %w", err)
	}
	return group, correct, nil
}

// attachCalls puts each call on the model segment of its turn (the one that
// ended in it) and, with its result, on the tool segment that answers it.
// A turn with several calls (turn mode) becomes the layout traj.Validate
// describes: its model segment split after each call but the last (where
// the call closed), its tool segment after each result (the format's
// ToolTurn.Ends), each piece carrying its own call. Tool text is decoded
// from the piece's tokens as the actor decodes a tool segment's.
func (r *runner) attachCalls(s *actor.Sequence, segs []traj.Segment, calls []callRecord) []traj.Segment {
	if len(calls) == 0 {
		return segs
	}
	byTurn := map[int][]callRecord{}
	for _, c := range calls {
		byTurn[c.turn] = append(byTurn[c.turn], c)
	}
	response := s.Tokens()[s.PromptLen():]
	out := make([]traj.Segment, 0, len(segs)+len(calls))
	for _, seg := range segs {
		cs := byTurn[seg.Turn]
		switch {
		case seg.Kind == traj.SegmentModel && len(cs) > 0:
			out = append(out, splitModel(seg, cs)...)
		case seg.Kind == traj.SegmentTool:
			var answered []callRecord
			for _, c := range cs {
				if c.result != nil {
					answered = append(answered, c)
				}
			}
			out = append(out, r.splitTool(seg, answered, response)...)
		default:
			out = append(out, seg)
		}
	}
	return out
}

// splitModel gives each call of a turn its own piece of the turn's model
// segment: piece i ends after the token that closed call i, the last runs
// to the segment's end. Boundaries are kept strictly increasing, so a
// token that closed two calls gives the second the next token (no piece is
// empty).
func splitModel(seg traj.Segment, cs []callRecord) []traj.Segment {
	out := make([]traj.Segment, len(cs))
	start, byteAt := seg.Start, 0
	for i, c := range cs {
		p := seg
		call := c.call
		p.Start, p.Call, p.Text = start, &call, seg.Text[byteAt:]
		if i < len(cs)-1 {
			end := min(max(seg.Start+c.closeTokens, start+1), seg.End-(len(cs)-1-i))
			b := min(max(c.closeBytes, byteAt), len(seg.Text))
			p.End, p.Text = end, seg.Text[byteAt:b]
			start, byteAt = end, b
		}
		out[i] = p
	}
	return out
}

// splitTool gives each answered call its part of the turn's tool segment.
func (r *runner) splitTool(seg traj.Segment, answered []callRecord, response []int32) []traj.Segment {
	if len(answered) == 0 {
		return []traj.Segment{seg}
	}
	if len(answered) == 1 {
		call, result := answered[0].call, *answered[0].result
		seg.Call, seg.Result = &call, &result
		return []traj.Segment{seg}
	}
	out := make([]traj.Segment, len(answered))
	start := seg.Start
	for i, c := range answered {
		end := c.toolEnd
		if i == len(answered)-1 || end <= start || end > seg.End {
			end = seg.End
		}
		call, result := c.call, *c.result
		text, _ := r.pol.Tokenizer().Decode(response[start:end], true)
		out[i] = traj.Segment{Kind: traj.SegmentTool, Turn: seg.Turn, Start: start, End: end, Text: text, Call: &call, Result: &result}
		start = end
	}
	return out
}

func (r *runner) scoreRef(ctx context.Context, ts []traj.Trajectory) error {
	seqs := make([][]int32, len(ts))
	lens := make([]int, len(ts))
	for i := range ts {
		seqs[i], lens[i] = ts[i].Tokens, ts[i].PromptLen
	}
	// The reference is scored at the sampling temperature, the quantity the
	// recorded logprobs are (T = 1 when greedy), so that logp - logp_ref
	// compares like with like, as verl's reference worker does.
	temperature := r.sampling.Temperature
	if temperature == 0 {
		temperature = 1
	}
	ref, err := r.ref.ScoreTemperature(ctx, seqs, lens, temperature)
	if err != nil {
		return fmt.Errorf("reference scoring: %w", err)
	}
	for i := range ts {
		lp := ref[i]
		for j, m := range ts[i].LossMask {
			if m == 0 {
				lp[j] = 0
			}
		}
		ts[i].RefLogprobs = lp
	}
	return nil
}
