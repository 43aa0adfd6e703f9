// Package trainer runs toolrl's closed loop in one process: roll out the
// current policy version on a slice of the prompt set (the orchestrator),
// compute GRPO advantages (advantage), take a learner update (learner),
// publish the next version (policystore), evaluate it on held-out prompts
// every few iterations, and go on with the new version. It writes
// metrics.jsonl, eval.jsonl and the published versions into one folder.
package trainer

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/internal/strictyaml"
	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/setting"
)

// Config is a training run, as read from a YAML file with strict keys.
type Config struct {
	// Rollout is the rollout job of every iteration, with the keys of a
	// `toolrl rollout --job` file: model (version 0), prompts (the RL prompt
	// set), group_size, seed, sampling, tools, limits, rewards, batch,
	// threads. Its out and resume keys must be unset: the trainer writes
	// OUT/trajectories.jsonl itself.
	Rollout orchestrator.Job `yaml:"rollout"`
	// Advantage chooses the advantage math (advantage.Spec; it has no
	// staleness keys: the learner drops stale records).
	Advantage advantage.Spec `yaml:"advantage"`
	// Learner holds the learner's settings (learner.Spec; defaults: its
	// declared ones, seed: the rollout's).
	Learner learner.Spec `yaml:"learner"`
	// Iterations is how many rollout → update → publish rounds to run.
	Iterations setting.Value[int] `yaml:"iterations" usage:"rollout → update → publish rounds to run (required)"`
	// PromptsPerIteration is how many prompts each iteration samples a group
	// for: consecutive slices of the prompt set, reshuffled (seeded) each
	// time the set is used up.
	PromptsPerIteration setting.Value[int] `yaml:"prompts_per_iteration" usage:"prompts each iteration samples a group for (required)"`
	// Eval configures the held-out evaluation.
	Eval EvalConfig `yaml:"eval"`
	// Out is the output folder (metrics.jsonl, eval.jsonl,
	// trajectories.jsonl, policy/ with the versions). Relative to the file.
	Out setting.Value[string] `yaml:"out" usage:"output folder: metrics.jsonl, eval.jsonl, trajectories.jsonl, policy/ (required; --out overrides)"`
	// Async overlaps each iteration's rollout with the previous iteration's
	// update: rollouts run one version behind the learner (staleness 1,
	// corrected by the ratio). Off: strictly on-policy.
	Async setting.Value[bool] `yaml:"async" default:"false" usage:"overlap each rollout with the previous update (one version of staleness; --async)"`
	// RolloutQuantization, when set, makes actors sample with a quantized
	// copy of each version (int8 or int4 MatMulNBits weights): every
	// published version also holds that copy (policystore.QuantizedForm),
	// version 0's is written to OUT/base/quantized, and the learner keeps
	// training its float32 weights. The records' logprobs are then the
	// quantized behaviour policy's; learner.tis_cap corrects the gap and
	// the metrics' rollout_mismatch reports it. Held-out evaluation samples
	// the float32 form (the learned policy). Unset: float32 rollouts.
	RolloutQuantization *QuantizationConfig `yaml:"rollout_quantization"`
	// IterationTimeout bounds how long the Redis driver waits for an
	// iteration's groups (workers or the advantage service gone, a prompt
	// dead-lettered) before it trains on what arrived.
	IterationTimeout setting.Value[time.Duration] `yaml:"iteration_timeout" default:"10m" usage:"with --redis: how long to wait for an iteration's groups before training on what arrived"`

	normalized bool
}

// QuantizationConfig is the YAML form of llama.Quantization.
type QuantizationConfig struct {
	Bits          setting.Value[int]  `yaml:"bits" usage:"8 or 4 (required when the section is given)"`
	BlockSize     setting.Value[int]  `yaml:"block_size" default:"32" usage:"weights per quantization block"`
	AccuracyLevel setting.Value[int]  `yaml:"accuracy_level" default:"0" usage:"MatMulNBits accuracy level: 0 or 4 (int8 activations)"`
	LMHead        setting.Value[bool] `yaml:"lm_head" default:"false" usage:"also quantize the output projection"`
}

// Quantization is the rollout quantization the config asks for (the zero
// value, float32, when the key is unset). It refuses, naming the key, bits
// other than 4 or 8 and any field Quantization.Validate refuses.
func (c *Config) Quantization() (llama.Quantization, error) {
	if c.RolloutQuantization == nil {
		return llama.Quantization{}, nil
	}
	rq := *c.RolloutQuantization
	if err := setting.ApplyDefaults(&rq); err != nil {
		return llama.Quantization{}, err
	}
	q := llama.Quantization{Bits: rq.Bits.Get(), BlockSize: rq.BlockSize.Get(), AccuracyLevel: rq.AccuracyLevel.Get(), LMHead: rq.LMHead.Get()}
	if rq.BlockSize.Get() < 1 {
		return q, fmt.Errorf("rollout_quantization.block_size: %d, want ≥ 1", rq.BlockSize.Get())
	}
	if q.Bits != 4 && q.Bits != 8 {
		return q, fmt.Errorf("rollout_quantization.bits: %d, want 8 or 4 (remove the key for float32 rollouts)", q.Bits)
	}
	if err := q.Validate(); err != nil {
		return q, fmt.Errorf("rollout_quantization: %w", err)
	}
	q.BlockSize = q.Block()
	return q, nil
}

// EvalConfig is the held-out evaluation.
type EvalConfig struct {
	// Prompts is a JSONL prompts file disjoint from the RL prompts (empty:
	// no evaluation). Relative to the file.
	Prompts setting.Value[string] `yaml:"prompts" usage:"held-out prompts JSONL, disjoint from the RL prompts (unset: no evaluation)"`
	// Limit caps the prompts read (0: all).
	Limit setting.Value[int] `yaml:"limit" default:"0" usage:"use at most N held-out prompts (0: all)"`
	// Every evaluates after every Every-th iteration, and before the first
	// (version 0) and after the last.
	Every setting.Value[int] `yaml:"every" default:"1" usage:"evaluate after every N-th iteration (and before the first and after the last)"`
	// GroupSize is the samples per prompt (default the rollout's).
	GroupSize setting.Value[int] `yaml:"group_size" usage:"samples per held-out prompt (default: the rollout's group_size)"`
	// Seed fixes the evaluation's sampling, the same for every version
	// (default the rollout's seed).
	Seed setting.Value[uint64] `yaml:"seed" usage:"the evaluation's seed, the same for every version (default: the rollout's)"`
	// SplitBy names prompt meta fields whose values split the figures
	// (e.g. difficulty: easy / hard).
	SplitBy setting.Value[[]string] `yaml:"split_by" usage:"prompt meta fields whose values split the figures (e.g. difficulty)"`
}

// LoadConfig reads a config file strictly: an unknown key is an error
// naming the file and line. Relative paths are relative to the file.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read train config: %w", err)
	}
	var c Config
	if err := strictyaml.Decode(data, &c); err != nil {
		return Config{}, fmt.Errorf("train config %s: %w", path, err)
	}
	base := filepath.Dir(path)
	c.Rollout.ResolvePaths(base)
	for _, p := range []*setting.Value[string]{&c.Eval.Prompts, &c.Out, &c.Learner.RefModel} {
		if v := p.Get(); v != "" && !filepath.IsAbs(v) {
			p.Set(filepath.Join(base, v), p.Source())
		}
	}
	return c, nil
}

// Normalize fills defaults and checks every field, naming the one at fault.
// A second call does nothing.
func (c *Config) Normalize() error {
	if c.normalized {
		return nil
	}
	if err := c.normalize(); err != nil {
		return err
	}
	c.normalized = true
	return nil
}

func (c *Config) normalize() error {
	if c.Rollout.Out.IsSet() {
		return fmt.Errorf("rollout.out: the trainer writes OUT/trajectories.jsonl itself; remove the key")
	}
	if c.Rollout.Resume.IsSet() {
		return fmt.Errorf("rollout.resume: use toolrl train --resume; remove the key")
	}
	if c.Rollout.Model.Get() == "" || c.Rollout.Prompts.Get() == "" {
		return fmt.Errorf("rollout.model and rollout.prompts are required")
	}
	if !c.Rollout.ID.IsSet() {
		c.Rollout.ID.Set("train", setting.Default)
	}
	c.Rollout.Out.Set(filepath.Join(c.Out.Get(), "trajectories.jsonl"), setting.Default)
	if err := c.Rollout.Normalize(); err != nil {
		return fmt.Errorf("rollout: %w", err)
	}
	c.Rollout.Resume = setting.Value[bool]{}
	if t := c.Rollout.Sampling.Temperature; t.Get() == 0 {
		// Normalize resolved the sampling, so a greedy model folder
		// (generation_config.json do_sample: false) is caught here too.
		return fmt.Errorf("rollout.sampling: greedy samples cannot be trained with a ratio (temperature 0 from %s); set a temperature > 0", t.Source())
	}
	if !c.Eval.GroupSize.IsSet() {
		c.Eval.GroupSize.Set(c.Rollout.GroupSize.Get(), setting.Default)
	}
	if !c.Eval.Seed.IsSet() {
		c.Eval.Seed.Set(c.Rollout.Seed.Get(), setting.Default)
	}
	// The sections resolve their own: the rollout above, the learner's and
	// the advantage math's from their specs below.
	if err := setting.ApplyDefaults(c, "rollout.", "learner.", "advantage.", "rollout_quantization."); err != nil {
		return err
	}
	for _, k := range []struct {
		key      string
		v, least int
	}{
		{"iterations", c.Iterations.Get(), 1}, {"prompts_per_iteration", c.PromptsPerIteration.Get(), 1},
		{"eval.every", c.Eval.Every.Get(), 1}, {"eval.group_size", c.Eval.GroupSize.Get(), 1}, {"eval.limit", c.Eval.Limit.Get(), 0},
	} {
		if k.v < k.least {
			return fmt.Errorf("%s: %d, want ≥ %d", k.key, k.v, k.least)
		}
	}
	if c.Out.Get() == "" {
		return fmt.Errorf("out: the output folder is required")
	}
	if d := c.IterationTimeout.Get(); d <= 0 {
		return fmt.Errorf("iteration_timeout: %v, want > 0", d)
	}
	if _, err := c.AdvantageConfig(); err != nil {
		return err
	}
	if _, err := c.Quantization(); err != nil {
		return err
	}
	if _, err := c.LearnerOptions(); err != nil {
		return err
	}
	return nil
}

// AdvantageConfig is the advantage math the config chooses: advantage.Spec
// resolved, with no staleness check (the advantages are of the version
// just rolled out; the learner drops stale records).
func (c *Config) AdvantageConfig() (advantage.Config, error) {
	return c.Advantage.Config(advantage.StalenessSpec{})
}

// LearnerOptions are the learner's options: learner.Spec resolved, with
// the trainer's derived defaults (seed: the rollout's; max_staleness at
// least 1 with async) for the keys the config leaves unset.
func (c *Config) LearnerOptions() (learner.Options, error) {
	l := c.Learner
	if !l.Seed.IsSet() {
		l.Seed.Set(c.Rollout.Seed.Get(), setting.Default)
	}
	o, err := l.Options()
	if err != nil {
		return o, err
	}
	if !l.MaxStaleness.IsSet() && c.Async.Get() {
		o.MaxStaleness = max(o.MaxStaleness, 1)
	}
	if c.Async.Get() && o.MaxStaleness >= 0 && o.MaxStaleness < 1 {
		return o, fmt.Errorf("learner.max_staleness: %d with async: true drops every record (async rollouts are one version behind)", o.MaxStaleness)
	}
	return o, nil
}
