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

	"go.yaml.in/yaml/v3"

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
	// Advantage chooses the advantage math (advantage.Spec, but for
	// max_staleness and flag_stale, which a train config refuses).
	Advantage advantage.Spec `yaml:"advantage"`
	// Learner holds the learner's settings (learner.Spec; defaults: its
	// declared ones, seed: the rollout's).
	Learner learner.Spec `yaml:"learner"`
	// Iterations is how many rollout → update → publish rounds to run.
	Iterations int `yaml:"iterations"`
	// PromptsPerIteration is how many prompts each iteration samples a group
	// for: consecutive slices of the prompt set, reshuffled (seeded) each
	// time the set is used up.
	PromptsPerIteration int `yaml:"prompts_per_iteration"`
	// Eval configures the held-out evaluation.
	Eval EvalConfig `yaml:"eval"`
	// Out is the output folder (metrics.jsonl, eval.jsonl,
	// trajectories.jsonl, policy/ with the versions). Relative to the file.
	Out string `yaml:"out"`
	// Async overlaps each iteration's rollout with the previous iteration's
	// update: rollouts run one version behind the learner (staleness 1,
	// corrected by the ratio). Off: strictly on-policy.
	Async bool `yaml:"async"`
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
	// dead-lettered) before it trains on what arrived (default 10m).
	IterationTimeout time.Duration `yaml:"iteration_timeout"`

	normalized bool
}

// QuantizationConfig is the YAML form of llama.Quantization: bits (8 or 4,
// required), block_size (default 32), accuracy_level (0 or 4, default 0),
// lm_head (default false).
type QuantizationConfig struct {
	Bits          int  `yaml:"bits"`
	BlockSize     int  `yaml:"block_size"`
	AccuracyLevel int  `yaml:"accuracy_level"`
	LMHead        bool `yaml:"lm_head"`
}

// Quantization is the rollout quantization the config asks for (the zero
// value, float32, when the key is unset). It refuses, naming the key, bits
// other than 4 or 8 and any field Quantization.Validate refuses.
func (c *Config) Quantization() (llama.Quantization, error) {
	if c.RolloutQuantization == nil {
		return llama.Quantization{}, nil
	}
	rq := c.RolloutQuantization
	q := llama.Quantization{Bits: rq.Bits, BlockSize: rq.BlockSize, AccuracyLevel: rq.AccuracyLevel, LMHead: rq.LMHead}
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
	Prompts string `yaml:"prompts"`
	// Limit caps the prompts read (0: all).
	Limit int `yaml:"limit"`
	// Every evaluates after every Every-th iteration, and before the first
	// (version 0) and after the last. Default 1.
	Every int `yaml:"every"`
	// GroupSize is the samples per prompt (default the rollout's).
	GroupSize int `yaml:"group_size"`
	// Seed fixes the evaluation's sampling, the same for every version
	// (default the rollout's seed).
	Seed *uint64 `yaml:"seed"`
	// SplitBy names prompt meta fields whose values split the figures
	// (e.g. difficulty: easy / hard).
	SplitBy []string `yaml:"split_by"`
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
	// The loop's own keys whose zero value means "the default" refuse an
	// explicit 0.
	var keys struct {
		IterationTimeout yaml.Node `yaml:"iteration_timeout"`
		Quantization     struct {
			BlockSize yaml.Node `yaml:"block_size"`
		} `yaml:"rollout_quantization"`
		Eval struct {
			Every     yaml.Node `yaml:"every"`
			GroupSize yaml.Node `yaml:"group_size"`
		} `yaml:"eval"`
	}
	if err := yaml.Unmarshal(data, &keys); err == nil {
		for _, k := range []struct {
			key, def string
			explicit bool
		}{
			{"iteration_timeout", "10m", keys.IterationTimeout.Kind == yaml.ScalarNode && c.IterationTimeout == 0},
			{"eval.every", "1", keys.Eval.Every.Kind == yaml.ScalarNode && c.Eval.Every == 0},
			{"eval.group_size", "the rollout's group_size", keys.Eval.GroupSize.Kind == yaml.ScalarNode && c.Eval.GroupSize == 0},
			{"rollout_quantization.block_size", "32", keys.Quantization.BlockSize.Kind == yaml.ScalarNode && c.RolloutQuantization != nil && c.RolloutQuantization.BlockSize == 0},
		} {
			if k.explicit {
				return Config{}, fmt.Errorf("train config %s: %s: 0 is not a valid value (omit the key for the default, %s)", path, k.key, k.def)
			}
		}
	}
	base := filepath.Dir(path)
	c.Rollout.ResolvePaths(base)
	for _, p := range []*string{&c.Eval.Prompts, &c.Out} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
	if r := c.Learner.RefModel; r.Get() != "" && !filepath.IsAbs(r.Get()) {
		c.Learner.RefModel.Set(filepath.Join(base, r.Get()), r.Source())
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
	c.Rollout.Out.Set(filepath.Join(c.Out, "trajectories.jsonl"), setting.Default)
	if err := c.Rollout.Normalize(); err != nil {
		return fmt.Errorf("rollout: %w", err)
	}
	c.Rollout.Resume = setting.Value[bool]{}
	if t := c.Rollout.Sampling.Temperature; t.Get() == 0 {
		// Normalize resolved the sampling, so a greedy model folder
		// (generation_config.json do_sample: false) is caught here too.
		return fmt.Errorf("rollout.sampling: greedy samples cannot be trained with a ratio (temperature 0 from %s); set a temperature > 0", t.Source())
	}
	if c.Iterations < 1 {
		return fmt.Errorf("iterations: %d, want ≥ 1", c.Iterations)
	}
	if c.PromptsPerIteration < 1 {
		return fmt.Errorf("prompts_per_iteration: %d, want ≥ 1", c.PromptsPerIteration)
	}
	if c.Out == "" {
		return fmt.Errorf("out: the output folder is required")
	}
	if c.IterationTimeout == 0 {
		c.IterationTimeout = 10 * time.Minute
	}
	if c.IterationTimeout < 0 {
		return fmt.Errorf("iteration_timeout: %v, want > 0", c.IterationTimeout)
	}
	if c.Eval.Every == 0 {
		c.Eval.Every = 1
	}
	if c.Eval.Every < 0 {
		return fmt.Errorf("eval.every: %d, want ≥ 1", c.Eval.Every)
	}
	if c.Eval.GroupSize == 0 {
		c.Eval.GroupSize = c.Rollout.GroupSize.Get()
	}
	if c.Eval.GroupSize < 1 {
		return fmt.Errorf("eval.group_size: %d, want ≥ 1", c.Eval.GroupSize)
	}
	if c.Eval.Limit < 0 {
		return fmt.Errorf("eval.limit: %d, want ≥ 0", c.Eval.Limit)
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
// resolved. Its staleness keys mean nothing here (the trainer computes the
// advantages of the version it just rolled out; the learner drops stale
// records) and are refused naming the key.
func (c *Config) AdvantageConfig() (advantage.Config, error) {
	for _, k := range []struct {
		key string
		set bool
	}{{"max_staleness", c.Advantage.MaxStaleness.IsSet()}, {"flag_stale", c.Advantage.FlagStale.IsSet()}} {
		if k.set {
			return advantage.Config{}, fmt.Errorf("advantage.%s: not a train config setting (the advantages are computed with no staleness check; the learner drops stale records, learner.max_staleness); remove the key", k.key)
		}
	}
	return c.Advantage.Config()
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
	if !l.MaxStaleness.IsSet() && c.Async {
		o.MaxStaleness = max(o.MaxStaleness, 1)
	}
	if c.Async && o.MaxStaleness >= 0 && o.MaxStaleness < 1 {
		return o, fmt.Errorf("learner.max_staleness: %d with async: true drops every record (async rollouts are one version behind)", o.MaxStaleness)
	}
	return o, nil
}
