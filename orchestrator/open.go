package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/sink"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

func (r *runner) open(ctx context.Context) error {
	job := r.job
	var err error
	r.pol, err = actor.Load(ctx, actor.LoadOptions{Dir: job.Model.Get(), Provider: job.Provider.Get(), IntraOpThreads: job.Threads.Get()})
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if job.RefModel.Get() != "" {
		r.ref, err = actor.Load(ctx, actor.LoadOptions{Dir: job.RefModel.Get(), Provider: job.Provider.Get(), IntraOpThreads: job.Threads.Get()})
		if err != nil {
			return fmt.Errorf("ref_model: %w", err)
		}
	}
	r.model, err = modelRef(job.Model.Get(), r.pol)
	if err != nil {
		return err
	}
	if r.opts.Policy != nil {
		if r.tokenizerHash, err = fileSHA256(filepath.Join(job.Model.Get(), "tokenizer.json")); err != nil {
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
	if lim := MaxCallsPerTurn(r.format); lim > 0 && lim < r.job.Limits.MaxToolCallsPerTurn.Get() {
		// The template renders no more calls per turn: more could not be
		// shown to the model as the conversation it sees at inference.
		r.log.Info("per-turn call cap lowered to the chat template's", "max_tool_calls_per_turn", lim, "job", r.job.Limits.MaxToolCallsPerTurn.Get())
		r.job.Limits.MaxToolCallsPerTurn.Set(lim, r.job.Limits.MaxToolCallsPerTurn.Source())
		r.exec = r.newExecutor()
	}
	// Normalize resolved the job's sampling (flag > job > the model folder's
	// generation_config.json > default); max_tokens bounds the whole
	// response, injections included, also while sampling.
	r.sampling = job.Decoding()
	r.summary.Sampling = job.SamplingReport()
	if h := r.opts.Hooks.Sampling; h != nil {
		h(&r.sampling)
	}
	if err := r.sampling.Validate(); err != nil {
		return err
	}

	r.feed = r.opts.Feed
	var prompts []prompt.Prompt
	if r.feed == nil {
		set, err := prompt.ReadFile(job.Prompts.Get(), job.Limit.Get(), job.SkipInvalid.Get())
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
	if job.Resume.Get() {
		// Resume keys by the versioned group id, so a rerun of iteration k
		// skips k's written groups only. It applies to fed prompts too (the
		// file sinks also need Resume before appending: it cuts a
		// half-written group, and the Parquet sink keeps the old groups).
		if r.done, err = r.sink.Resume(ctx); err != nil {
			return fmt.Errorf("resume from %s: %w", sink.DisplayOut(job.Out.Get()), err)
		}
	}
	// The progress total: unknown (-1) for a feed such as a worker's, which
	// hands out prompts as they come.
	total := -1
	if list, ok := r.feed.(*prompt.List); ok {
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
		r.feed = &prompt.List{Prompts: kept}
		total = len(kept)
	}
	r.progress = NewProgress(r.opts.ProgressOut, total, r.log)
	r.eng = actor.NewEngine(r.pol, actor.EngineOptions{MaxBatch: job.Batch.Get()})
	if h := r.opts.Hooks.Engine; h != nil {
		h(r.eng)
	}
	return nil
}

func (r *runner) openSink(ctx context.Context) (sink.Sink, error) {
	if r.opts.Sink != nil {
		return r.opts.Sink, nil
	}
	return sink.OpenSink(ctx, r.job.Out.Get(), r.job.ID.Get(), !r.job.Resume.Get())
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
		GlobalLimit:           r.job.ToolConcurrency.Get(),
		MaxCallsPerTurn:       r.job.Limits.MaxToolCallsPerTurn.Get(),
		MaxCallsPerTrajectory: r.job.Limits.MaxToolCalls.Get(),
		NoCalls:               r.job.Limits.MaxToolCalls.Get() == 0,
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
	return OpenFormat(job.Model.Get(), r.pol.Tokenizer(), FormatOptions{
		Format: job.Format.Get(), ToolCallFormat: job.ToolCallFormat.Get(), System: job.SystemPrompt.Get(),
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
