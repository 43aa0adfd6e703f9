package learner

import (
	"fmt"

	"github.com/toolrl/toolrl/setting"
)

// Spec is the learner's settings, each declared once: its YAML key (under
// a train config's learner:), its `toolrl learn` flag, its default and its
// help. A train config decodes into it, `toolrl learn` binds its flags
// (setting.Bind), and Options resolves it. An explicit 0 (kl_beta: 0,
// --dual-clip 0) is a setting, never "unset".
type Spec struct {
	LR          setting.Value[float64] `yaml:"lr" flag:"lr" default:"0.0001" usage:"AdamW learning rate (constant after --warmup)"`
	Warmup      setting.Value[int]     `yaml:"warmup" flag:"warmup" default:"0" usage:"linear learning-rate warmup, in optimiser steps"`
	WeightDecay setting.Value[float64] `yaml:"weight_decay" flag:"weight-decay" default:"0.01" usage:"AdamW decoupled weight decay"`
	ClipGrad    setting.Value[float64] `yaml:"clip_grad" flag:"clip-grad" default:"1" usage:"clip the global gradient norm to this (0: off)"`
	Minibatches setting.Value[int]     `yaml:"minibatches" flag:"minibatches" default:"1" usage:"optimiser steps per batch (the batch split into this many minibatches)"`
	Epochs      setting.Value[int]     `yaml:"epochs" flag:"epochs" default:"1" usage:"passes over each batch (ppo_epochs)"`
	ClipLow     setting.Value[float64] `yaml:"clip_low" flag:"clip-low" default:"0.2" usage:"ratio lower bound 1−ε_low"`
	ClipHigh    setting.Value[float64] `yaml:"clip_high" flag:"clip-high" default:"0.28" usage:"ratio upper bound 1+ε_high (DAPO clip-higher)"`
	DualClip    setting.Value[float64] `yaml:"dual_clip" flag:"dual-clip" default:"3" usage:"dual-clip constant c > 1 for negative advantages (0: off)"`
	TISCap      setting.Value[float64] `yaml:"tis_cap" flag:"tis-cap" default:"0" usage:"truncated importance sampling cap C on π_learner_old/π_behaviour (0: off; 2 is common)"`
	KLBeta      setting.Value[float64] `yaml:"kl_beta" flag:"kl-beta" default:"0" usage:"weight of the k3 KL to the reference policy in the loss"`
	LossAgg     setting.Value[string]  `yaml:"loss_agg" flag:"loss-agg" default:"token-mean" usage:"token-mean | seq-mean-token-mean | seq-mean-token-sum-norm (Dr.GRPO)"`
	// LossNormLength is seq-mean-token-sum-norm's L.
	LossNormLength setting.Value[int] `yaml:"loss_norm_length" flag:"loss-norm-length" default:"256" usage:"the constant length L of seq-mean-token-sum-norm"`
	// MaxStaleness: a train config with async: true and the key unset
	// gets at least 1 (trainer.Config.LearnerOptions).
	MaxStaleness     setting.Value[int64] `yaml:"max_staleness" flag:"max-staleness" default:"1" usage:"drop records more than this many versions behind the learner (negative: no bound)"`
	MicroBatchTokens setting.Value[int]   `yaml:"micro_batch_tokens" flag:"micro-batch-tokens" default:"4096" usage:"tokens per forward/backward pass (gradients accumulate over a minibatch)"`
	SkipNonFinite    setting.Value[bool]  `yaml:"skip_non_finite" flag:"skip-non-finite" default:"false" usage:"skip (and count) an update whose loss, gradient or weights are not finite, instead of stopping"`
	// Seed: a train config with the key unset uses the rollout's seed.
	Seed setting.Value[uint64] `yaml:"seed" flag:"seed" default:"0" usage:"minibatch order seed"`
	// RefModel is the reference policy's folder (empty: the policy's
	// version 0; in a train config, relative to the file). It is not part
	// of Options: the caller loads it.
	RefModel setting.Value[string] `yaml:"ref_model" flag:"ref-model" usage:"reference policy of the KL term for records without ref_log_prob (default: the --model folder, version 0)"`
}

// AdamW's moment constants and epsilon: not settings (verl's and TRL's
// defaults; DefaultOptions documents them).
const (
	adamBeta1 = 0.9
	adamBeta2 = 0.999
	adamEps   = 1e-8
)

// Options resolves the spec: every unset setting takes its declared
// default, and the result is checked once. An error names the setting as
// the user gave it: its flag (--lr) when a flag set it, else its key
// (learner.lr).
func (s Spec) Options() (Options, error) {
	if err := setting.ApplyDefaults(&s); err != nil {
		return Options{}, err
	}
	agg, err := ParseAggregation(s.LossAgg.Get())
	if err != nil {
		return Options{}, fmt.Errorf("%s: %w", s.name("loss_agg"), err)
	}
	o := Options{
		Loss: LossConfig{
			ClipLow: s.ClipLow.Get(), ClipHigh: s.ClipHigh.Get(), DualClip: s.DualClip.Get(), TISCap: s.TISCap.Get(),
			KLBeta: s.KLBeta.Get(), Agg: agg, NormLength: s.LossNormLength.Get(),
		},
		LR: s.LR.Get(), WarmupSteps: s.Warmup.Get(), WeightDecay: s.WeightDecay.Get(),
		Beta1: adamBeta1, Beta2: adamBeta2, Eps: adamEps,
		ClipNorm: s.ClipGrad.Get(), Minibatches: s.Minibatches.Get(), Epochs: s.Epochs.Get(),
		MaxStaleness: s.MaxStaleness.Get(), Seed: s.Seed.Get(), MicroBatchTokens: s.MicroBatchTokens.Get(),
		SkipNonFinite: s.SkipNonFinite.Get(),
	}
	if err := o.validate(s.name); err != nil {
		return o, err
	}
	return o, nil
}

// name is how an error names the setting of YAML key key: its flag when a
// flag set it (setting.Name), else learner.KEY.
func (s *Spec) name(key string) string {
	if n := setting.Name(s, key); n != key {
		return n
	}
	return "learner." + key
}
