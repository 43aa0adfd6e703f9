package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/models/bpetrain"
	"github.com/toolrl/toolrl/models/calcdata"
	"github.com/toolrl/toolrl/models/train"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// newModelCalcCmds returns the default policy's verbs (data, tokenizer, train, eval).
func newModelCalcCmds() []*cobra.Command {
	return []*cobra.Command{newModelDataCmd(), newModelTokenizerCmd(), newModelTrainCmd(), newModelEvalCmd()}
}

func newModelDataCmd() *cobra.Command {
	var out, splitName string
	var n int
	cmd := &cobra.Command{
		Use:   "data",
		Short: "Write a calc prompt set: the held-out test prompts or the RL prompts (JSONL: id, prompt, answer, meta.difficulty)",
		Long: fmt.Sprintf(`data writes one of the two shipped calc prompt sets, one JSON object a line:
{"id","prompt","answer","meta":{"difficulty":"easy"|"hard"}}.

  --split test  the held-out evaluation prompts (seed %d, ids calc-NNNN),
                %d by default, %s
  --split rl    the RL training prompts (seed %d, ids calc-rl-NNNN), %d by
                default, %s; none is one of the %d held-out
                prompts or a prompt the shipped model was trained on, and the
                held-out set's share of easy prompts is kept

difficulty is "easy" for a problem drawn easy (one operation on operands 1-5),
"hard" otherwise. Only the first %d test prompts are kept out of training and
of the RL set: a larger --n for test adds prompts that may overlap them.`,
			calcdata.TestSeed, calcdata.HeldOut, calcdata.SplitTest.Path(),
			calcdata.RLSeed, calcdata.RLPrompts, calcdata.SplitRL.Path(), calcdata.HeldOut, calcdata.HeldOut),
		Example: `  toolrl model data --out data/calc/prompts.jsonl
  toolrl model data --split rl --out data/calc/rl.jsonl
  toolrl model data --split rl --n 4096 --out /tmp/rl-4k.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			split, err := calcdata.ParseSplit(splitName)
			if err != nil {
				return usageErrorf("--split: %v", err)
			}
			if !cmd.Flags().Changed("n") {
				n = split.Size()
			}
			if n <= 0 {
				return usageErrorf("--n must be positive, got %d", n)
			}
			if out == "" {
				out = split.Path()
			}
			problems, err := split.Problems(n)
			if err != nil {
				return fmt.Errorf("model data: %w", err)
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return fmt.Errorf("model data: %w", err)
			}
			f, err := os.Create(out)
			if err != nil {
				return fmt.Errorf("model data: %w", err)
			}
			if err := calcdata.WritePrompts(f, split, problems); err != nil {
				f.Close()
				return fmt.Errorf("model data %s: %w", out, err)
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("model data %s: %w", out, err)
			}
			easy := 0
			for _, p := range problems {
				if p.Difficulty() == calcdata.DifficultyEasy {
					easy++
				}
			}
			slog.Info("wrote calc prompts", "split", split, "path", out, "n", n, "easy", easy, "hard", n-easy)
			return nil
		},
	}
	cmd.Flags().StringVar(&splitName, "split", string(calcdata.SplitTest), "prompt set: test (held-out evaluation) or rl (RL training)")
	cmd.Flags().StringVar(&out, "out", "", fmt.Sprintf("output JSONL path (default: %s for test, %s for rl)", calcdata.SplitTest.Path(), calcdata.SplitRL.Path()))
	cmd.Flags().IntVar(&n, "n", 0, fmt.Sprintf("number of prompts (default: %d for test, %d for rl)", calcdata.HeldOut, calcdata.RLPrompts))
	return cmd
}

func newModelTokenizerCmd() *cobra.Command {
	var out string
	var vocab int
	cmd := &cobra.Command{
		Use:     "tokenizer",
		Short:   "Train the calc policy's byte-level BPE and write tokenizer.json",
		Example: `  toolrl model tokenizer --out models/calc/tokenizer.json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := calcdata.TrainTokenizer(vocab)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return fmt.Errorf("model tokenizer: %w", err)
			}
			if err := tok.WriteFile(out); err != nil {
				return err
			}
			slog.Info("wrote tokenizer", "path", out, "vocab", tok.VocabSize(), "merges", len(tok.Merges))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "models/calc/tokenizer.json", "output tokenizer.json path")
	cmd.Flags().IntVar(&vocab, "vocab", calcdata.VocabSize, "vocabulary size (bytes + merges + 1 special)")
	return cmd
}

func newModelTrainCmd() *cobra.Command {
	var out, tokPath, snapDir string
	o := calcdata.DefaultPolicyOptions()
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train the default calc policy in pure Go and write its model folder",
		Long: `train generates the word-problem training set, encodes it with the folder's
tokenizer.json (run "toolrl model tokenizer" first), trains a small Llama with
AdamW under a cosine schedule (loss on the policy's tokens only; tool results
masked), and writes model.safetensors, config.json, generation_config.json,
tokenizer_config.json, tools.yaml, prompt_format.json and model.onnx.
Everything is seeded: the same flags on the same build give the same bytes.
Build with GOEXPERIMENT=simd for the AVX GEMM kernel (make model does).`,
		Example: `  toolrl model train --out models/calc
  toolrl model train --out /tmp/calc-small --steps 200 --dim 64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Train.Steps <= 0 || o.Train.BatchSize <= 0 || o.Examples <= 0 {
				return usageErrorf("--steps, --batch and --examples must be positive")
			}
			if tokPath == "" {
				tokPath = filepath.Join(out, "tokenizer.json")
			}
			tok, err := bpetrain.Load(tokPath)
			if err != nil {
				return usageErrorf("model train: %v (run `toolrl model tokenizer --out %s` first)", err, tokPath)
			}
			if snapDir != "" {
				o.Snapshot = func(m *train.Model, step int) error {
					return writeCalcModel(filepath.Join(snapDir, fmt.Sprintf("step-%06d", step)), m, tok)
				}
			}
			m, res, err := calcdata.TrainPolicy(cmd.Context(), tok, o)
			if err != nil {
				return fmt.Errorf("model train: %w", err)
			}
			slog.Info("trained", "steps", res.Steps, "loss", res.LastLoss, "eval_loss", res.EvalLoss, "elapsed", res.Elapsed.String(), "gemm", train.KernelName())
			return writeCalcModel(out, m, tok)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "models/calc", "model folder to write")
	fl.StringVar(&tokPath, "tokenizer", "", "tokenizer.json (default: <out>/tokenizer.json)")
	fl.IntVar(&o.Train.Steps, "steps", o.Train.Steps, "optimiser steps")
	fl.IntVar(&o.Train.BatchSize, "batch", o.Train.BatchSize, "sequences per step")
	fl.IntVar(&o.Examples, "examples", o.Examples, "training examples generated")
	fl.Float64Var(&o.Train.LR, "lr", o.Train.LR, "peak learning rate")
	fl.IntVar(&o.Model.Dim, "dim", o.Model.Dim, "hidden size")
	fl.IntVar(&o.Model.Layers, "layers", o.Model.Layers, "decoder layers")
	fl.IntVar(&o.Model.Heads, "heads", o.Model.Heads, "attention heads")
	fl.IntVar(&o.Model.KVHeads, "kv-heads", o.Model.KVHeads, "key/value heads")
	fl.IntVar(&o.Model.FF, "ff", o.Model.FF, "MLP intermediate size")
	fl.IntVar(&o.Model.MaxPos, "max-pos", o.Model.MaxPos, "maximum sequence length")
	fl.Uint64Var(&o.Seed, "seed", o.Seed, "initialisation seed")
	fl.Uint64Var(&o.Train.Seed, "data-seed", o.Train.Seed, "data-order seed")
	fl.IntVar(&o.Train.LogEvery, "log-every", o.Train.LogEvery, "log every N steps")
	fl.StringVar(&snapDir, "snapshot-dir", "", "write intermediate model folders here (step-NNNNNN)")
	fl.IntVar(&o.Train.SnapshotEvery, "snapshot-every", 500, "steps between snapshots (with --snapshot-dir)")
	return cmd
}

// writeCalcModel writes the whole HF folder: weights, config, ONNX, the
// tokenizer and the calc policy's prompt format and tools.
func writeCalcModel(dir string, m *train.Model, tok *bpetrain.Tokenizer) error {
	tj, err := tok.MarshalJSON()
	if err != nil {
		return err
	}
	sp := int(tok.SpecialID())
	files, err := calcdata.FolderFiles(tj, sp, bpetrain.SpecialToken)
	if err != nil {
		return fmt.Errorf("write model %s: %w", dir, err)
	}
	if err := m.WriteFolder(dir, sp, sp, sp, files); err != nil {
		return err
	}
	slog.Info("wrote model folder", "dir", dir)
	return nil
}

// calcEvalFlags are the eval command's knobs.
type calcEvalFlags struct {
	model, prompts string
	samples, limit int
	temperature    float64
	seed           uint64
	maxNew         int
	threads        int
	samplesOut     string
}

func newModelEvalCmd() *cobra.Command {
	var f calcEvalFlags
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Measure the calc policy on held-out prompts through the actor (ONNX Runtime)",
		Long: `eval samples G completions per held-out prompt with the actor (ONNX Runtime,
batched decode, KV cache), runs every [CALC: ...] call through the tools
registry in the model folder (tools.yaml) and injects tools.BracketInjection of
the result, exactly as a rollout does. It prints the share of calls that parse,
of samples that call a tool, the accuracy (the completion ends with
"The answer is N." and N is the answer), and the share of groups whose
correctness is not all equal.`,
		Example: `  toolrl model eval --model models/calc --prompts data/calc/prompts.jsonl --samples 8 --temperature 1`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := runCalcEval(cmd.Context(), f)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), m.Report())
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "models/calc", "model folder")
	fl.StringVar(&f.prompts, "prompts", "data/calc/prompts.jsonl", "held-out prompts (JSONL: id, prompt, answer)")
	fl.IntVar(&f.samples, "samples", 8, "samples per prompt (G)")
	fl.IntVar(&f.limit, "limit", 0, "evaluate only the first N prompts (0: all)")
	fl.Float64Var(&f.temperature, "temperature", 1, "sampling temperature")
	fl.Uint64Var(&f.seed, "seed", 1, "job seed (per-sample seeds derive from it)")
	fl.IntVar(&f.maxNew, "max-new-tokens", 64, "sampled-token cap per sample")
	fl.IntVar(&f.threads, "threads", 0, "ONNX Runtime intra-op threads (0: one per core)")
	fl.StringVar(&f.samplesOut, "samples-out", "", "also write every sample (JSONL: id, sample, answer, completion, correct)")
	return cmd
}

// calcDetector adapts the tools package's streaming bracket parser to the
// actor's CallDetector and keeps the completed call.
type calcDetector struct {
	parser tools.Parser
	call   *tools.Call
}

func (d *calcDetector) Feed(delta string) bool {
	res := d.parser.Add(delta, false)
	if len(res.Calls) > 0 {
		c := res.Calls[0]
		d.call = &c
		return true
	}
	return false
}

// runCalcEval samples the held-out prompts and scores them.
func runCalcEval(ctx context.Context, f calcEvalFlags) (calcdata.Metrics, error) {
	var m calcdata.Metrics
	if f.samples <= 0 || f.temperature < 0 {
		return m, usageErrorf("--samples must be positive and --temperature non-negative")
	}
	pf, err := os.Open(f.prompts)
	if err != nil {
		return m, usageErrorf("model eval: %v", err)
	}
	recs, err := calcdata.ReadPrompts(pf)
	pf.Close()
	if err != nil {
		return m, fmt.Errorf("model eval: %s: %w", f.prompts, err)
	}
	if f.limit > 0 && f.limit < len(recs) {
		recs = recs[:f.limit]
	}
	reg, err := tools.LoadRegistry(ctx, filepath.Join(f.model, "tools.yaml"))
	if err != nil {
		return m, fmt.Errorf("model eval: %w", err)
	}
	defer reg.Close()
	exec := tools.NewExecutor(reg, tools.ExecutorOptions{})
	pol, err := actor.Load(ctx, actor.LoadOptions{Dir: f.model, IntraOpThreads: f.threads})
	if err != nil {
		return m, fmt.Errorf("model eval: %w", err)
	}
	defer pol.Close()
	tok := pol.Tokenizer()
	eng := actor.NewEngine(pol, actor.EngineOptions{MaxBatch: 64})
	defer eng.Close()
	type group struct {
		rec     calcdata.PromptRecord
		seqs    []*actor.Sequence
		results []calcdata.SampleResult
		texts   []string
		left    int
	}
	groups := map[string]*group{}
	var order []*group
	sampling := actor.Sampling{Temperature: f.temperature, MaxNewTokens: f.maxNew}
	for _, rec := range recs {
		ids, err := tok.Encode(calcdata.Render(rec.Prompt), true)
		if err != nil {
			return m, fmt.Errorf("model eval: encode prompt %s: %w", rec.ID, err)
		}
		seeds := make([]uint64, f.samples)
		for i := range seeds {
			seeds[i] = actor.SampleSeed(f.seed, rec.ID, i)
		}
		seqs, err := eng.AddGroup(actor.GroupRequest{
			ID: rec.ID, Prompt: ids, Seeds: seeds, Sampling: sampling,
			NewDetector: func() actor.CallDetector {
				p, _ := tools.NewParser("bracket", reg, tools.ParserOptions{})
				return &calcDetector{parser: p}
			},
		})
		if err != nil {
			return m, fmt.Errorf("model eval: prompt %s: %w", rec.ID, err)
		}
		g := &group{rec: rec, seqs: seqs, results: make([]calcdata.SampleResult, f.samples), texts: make([]string, f.samples), left: f.samples}
		groups[rec.ID] = g
		order = append(order, g)
	}
	for !eng.Idle() {
		events, err := eng.Step(ctx)
		if err != nil {
			return m, fmt.Errorf("model eval: %w", err)
		}
		for _, ev := range events {
			g := groups[ev.Seq.GroupID()]
			res := &g.results[ev.Seq.Index()]
			switch ev.Kind {
			case actor.EventToolCall:
				det := ev.Seq.Detector().(*calcDetector)
				call := *det.call
				res.Calls++
				var out traj.ToolResult
				if call.OK() {
					out = exec.Execute(ctx, call)
				} else {
					out = tools.Failure(call.ErrorClass, call.Error)
				}
				if out.OK {
					res.CallsParsed++
				}
				inj, err := tok.Encode(tools.BracketInjection(out), false)
				if err != nil {
					return m, fmt.Errorf("model eval: encode tool result: %w", err)
				}
				if err := ev.Seq.Inject(inj); err != nil {
					return m, fmt.Errorf("model eval: inject: %w", err)
				}
			case actor.EventFinished:
				s := ev.Seq
				text, err := tok.Decode(s.Tokens()[s.PromptLen():], true)
				if err != nil {
					return m, fmt.Errorf("model eval: decode: %w", err)
				}
				ans, ok := calcdata.ExtractAnswer(text)
				res.Answered = ok
				res.Correct = ok && ans == g.rec.Answer
				g.texts[s.Index()] = text
				g.left--
				if g.left == 0 {
					slog.Debug("group done", "id", g.rec.ID)
				}
			}
		}
	}
	for _, g := range order {
		m.AddGroup(g.results)
	}
	if f.samplesOut != "" {
		if err := writeCalcSamples(f.samplesOut, func(yield func(string, int, string, string, bool)) {
			for _, g := range order {
				for i, r := range g.results {
					yield(g.rec.ID, i, g.rec.Answer, g.texts[i], r.Correct)
				}
			}
		}); err != nil {
			return m, err
		}
	}
	return m, nil
}

// writeCalcSamples writes one JSON line per evaluated sample.
func writeCalcSamples(path string, each func(yield func(id string, sample int, answer, completion string, correct bool))) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("model eval: %w", err)
	}
	enc := json.NewEncoder(f)
	enc.SetEscapeHTML(false)
	var werr error
	each(func(id string, sample int, answer, completion string, correct bool) {
		if werr == nil {
			werr = enc.Encode(map[string]any{"id": id, "sample": sample, "answer": answer, "completion": completion, "correct": correct})
		}
	})
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("model eval: write %s: %w", path, werr)
	}
	return nil
}
