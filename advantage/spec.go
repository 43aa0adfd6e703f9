package advantage

import "github.com/toolrl/toolrl/setting"

// Spec is the advantage math's settings, each declared once: its YAML key
// (under a train config's advantage:), its flag (`toolrl advantage` and
// `toolrl advantage serve`), its default and its help. Config resolves it.
// An explicit 0 (kl_coef: 0) is a setting, never "unset".
type Spec struct {
	Mode             setting.Value[string]  `yaml:"mode" flag:"mode" default:"stepgroup" usage:"outcome | process (DeepSeekMath per-step) | hybrid (outcome + process-weight × process) | stepgroup (GiGPO: outcome + process-weight × step advantage within same-state groups) | turns (MT-GRPO: answer and turn rewards normalised separately)"`
	Estimator        setting.Value[string]  `yaml:"estimator" flag:"estimator" default:"drgrpo" usage:"grpo (mean/std) | drgrpo (mean only) | rloo (leave-one-out mean)"`
	KL               setting.Value[string]  `yaml:"kl" flag:"kl" usage:"per-token KL estimator written to records: k1 | k2 | k3 (needs ref_log_prob); empty for none"`
	KLCoef           setting.Value[float64] `yaml:"kl_coef" flag:"kl-coef" default:"0" usage:"fold the KL into the rewards with this coefficient (0: report only)"`
	ProcessWeight    setting.Value[float64] `yaml:"process_weight" flag:"process-weight" default:"1" usage:"weight of the process advantage in hybrid mode, of the step-group advantage in stepgroup mode, of the turn advantage in turns mode"`
	Gamma            setting.Value[float64] `yaml:"gamma" flag:"gamma" default:"1" usage:"per-step discount of later steps' rewards (process, hybrid, stepgroup), in (0, 1]"`
	Eps              setting.Value[float64] `yaml:"eps" flag:"eps" default:"1e-06" usage:"added to the standard deviation (grpo)"`
	DropZeroVariance setting.Value[bool]    `yaml:"drop_zero_variance" flag:"drop-zero-variance" default:"false" usage:"drop groups whose rewards are all equal (they are always counted)"`
	KeepOutcomeSign  setting.Value[bool]    `yaml:"keep_outcome_sign" flag:"keep-outcome-sign" default:"true" usage:"in a group with right and wrong answers, no right answer's token advantage below 0 and no wrong one's above 0 (AdaTIR's sign reversal: costs never push a right answer down)"`
}

// StalenessSpec is the staleness check of `toolrl advantage` and `toolrl
// advantage serve`: each group's policy version against the trainer's
// (Config.CurrentPolicyVersion, which is not a setting). A train config has
// no such keys: its advantages are of the version just rolled out, and the
// learner drops stale records (learner.max_staleness).
type StalenessSpec struct {
	MaxStaleness setting.Value[int64] `yaml:"max_staleness" flag:"max-staleness" default:"-1" usage:"drop groups more than this many policy versions behind (negative: no check)"`
	FlagStale    setting.Value[bool]  `yaml:"flag_stale" flag:"flag-stale" default:"false" usage:"keep stale groups, with stale=true, instead of dropping them"`
}

// Config resolves the spec and the staleness check st: every unset setting
// takes its declared default, and the result is checked once. An error
// names the setting as the user gave it: its flag (--mode) when a flag set
// it, else its key (advantage.mode). CurrentPolicyVersion is 0; the caller
// sets it.
func (s Spec) Config(st StalenessSpec) (Config, error) {
	if err := setting.ApplyDefaults(&s); err != nil {
		return Config{}, err
	}
	if err := setting.ApplyDefaults(&st); err != nil {
		return Config{}, err
	}
	c := Config{
		Mode: Mode(s.Mode.Get()), Estimator: Estimator(s.Estimator.Get()), Eps: s.Eps.Get(),
		ProcessWeight: s.ProcessWeight.Get(), Gamma: s.Gamma.Get(),
		KL: KLEstimator(s.KL.Get()), KLCoef: s.KLCoef.Get(), DropZeroVariance: s.DropZeroVariance.Get(),
		KeepOutcomeSign: s.KeepOutcomeSign.Get(),
		MaxStaleness:    st.MaxStaleness.Get(), FlagStale: st.FlagStale.Get(),
	}
	if err := c.validate(s.name); err != nil {
		return c, err
	}
	return c, nil
}

// name is how an error names the setting of YAML key key: its flag when a
// flag set it (setting.Name), else advantage.KEY.
func (s *Spec) name(key string) string {
	if n := setting.Name(s, key); n != key {
		return n
	}
	return "advantage." + key
}
