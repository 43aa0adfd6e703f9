package calcdata

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"

	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/recipe/bpetrain"
)

// Pipeline defaults: `make model` uses exactly these.
const (
	HeldOut     = 256   // held-out prompts shipped in data/calc/prompts.jsonl
	RLPrompts   = 1024  // RL training prompts shipped in data/calc/rl.jsonl
	VocabSize   = 640   // tokenizer vocabulary (bytes + merges + 1 special)
	TokExamples = 20000 // examples the tokenizer is trained on
)

// TrainTokenizer trains the calc policy's BPE on rendered training examples.
func TrainTokenizer(vocab int) (*bpetrain.Tokenizer, error) {
	exs := TrainExamples(TokExamples, DefaultMix(), HeldOut)
	tok, err := bpetrain.Train(Corpus(exs), vocab)
	if err != nil {
		return nil, fmt.Errorf("calc tokenizer: %w", err)
	}
	return tok, nil
}

// PolicyOptions configure TrainPolicy.
type PolicyOptions struct {
	Model    train.Config // Vocab is taken from the tokenizer
	Train    train.Options
	Examples int    // training examples generated
	Seed     uint64 // initialisation seed (Train.Seed orders the data)
	// Mix is the training data's mix; the zero value is DefaultMix (the
	// shipped model's). The held-out eval loss always uses DefaultMix.
	Mix Mix
	// Snapshot, when set, is called every Train.SnapshotEvery steps with the
	// model being trained (for intermediate evaluations; it must not modify m).
	Snapshot func(m *train.Model, step int) error
}

// DefaultPolicyOptions are the shipped model's settings.
func DefaultPolicyOptions() PolicyOptions {
	return PolicyOptions{
		Model:    train.Config{Dim: 128, Layers: 3, Heads: 4, KVHeads: 4, FF: 256, MaxPos: 256, RopeTheta: 10000, NormEps: 1e-5},
		Train:    train.Options{Steps: 4000, BatchSize: 16, LR: 3e-3, Seed: 1, LogEvery: 50},
		Examples: 200000,
		Seed:     1,
	}
}

// ParseMix reads a training mix by name, as toolrl model train --mix takes
// it: "default" (DefaultMix, models/calc's) or "overcall" (OvercallMix,
// models/calc-overcall's).
func ParseMix(name string) (Mix, error) {
	switch name {
	case "default", "":
		return DefaultMix(), nil
	case "overcall":
		return OvercallMix(), nil
	}
	return Mix{}, fmt.Errorf("%q, want default or overcall", name)
}

// OvercallPolicyOptions are models/calc-overcall's settings: the shipped
// model's, with OvercallMix and twice the steps (the shipped model's held-out
// loss was still falling at 4,000 steps, which saw 64,000 of its 200,000
// examples).
func OvercallPolicyOptions() PolicyOptions {
	o := DefaultPolicyOptions()
	o.Mix = OvercallMix()
	o.Train.Steps = 8000
	return o
}

// TrainPolicy generates the training set, encodes it with tok and trains a
// model; the held-out prompts (with a seeded completion each) are the eval set.
func TrainPolicy(ctx context.Context, tok *bpetrain.Tokenizer, o PolicyOptions) (*train.Model, train.Result, error) {
	eos := tok.SpecialID()
	mix := o.Mix
	if mix == (Mix{}) {
		mix = DefaultMix()
	}
	exs := TrainExamples(o.Examples, mix, HeldOut)
	data := make([]train.Sequence, len(exs))
	longest := 0
	for i, ex := range exs {
		data[i] = Sequence(tok, ex, eos)
		longest = max(longest, len(data[i].Tokens))
	}
	evalR := rand.New(rand.NewPCG(TestSeed, 1))
	var eval []train.Sequence
	for _, p := range TestProblems(HeldOut) {
		eval = append(eval, Sequence(tok, Complete(evalR, p, DefaultMix()), eos))
	}
	cfg := o.Model
	cfg.Vocab = tok.VocabSize()
	m, err := train.NewModel(cfg, o.Seed)
	if err != nil {
		return nil, train.Result{}, err
	}
	log := o.Train.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Info("training calc policy", "mix", fmt.Sprintf("%+v", mix), "params", m.NumParams(), "examples", len(data), "longest", longest,
		"steps", o.Train.Steps, "batch", o.Train.BatchSize, "config", fmt.Sprintf("%+v", cfg))
	opts := o.Train
	opts.Eval = eval
	if o.Snapshot != nil {
		opts.Snapshot = func(step int) error { return o.Snapshot(m, step) }
	}
	res, err := train.Run(ctx, m, data, opts)
	if err != nil {
		return nil, res, fmt.Errorf("calc policy: %w", err)
	}
	return m, res, nil
}
