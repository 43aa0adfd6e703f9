package advantage

import (
	"fmt"
	"math"
)

// Mode says which rewards drive the advantages.
type Mode string

// The advantage modes.
const (
	// ModeOutcome gives every response token of sample i the sequence-level
	// advantage A_i computed from the total rewards of the group.
	ModeOutcome Mode = "outcome"
	// ModeProcess is DeepSeekMath's process-supervision GRPO over the
	// per-step rewards (Trajectory.StepRewards, one per step: an assistant
	// turn, traj.Trajectory.Steps). Every model segment of a turn (a turn
	// of N parallel calls has N) gets the turn's step advantage.
	ModeProcess Mode = "process"
	// ModeHybrid is outcome + ProcessWeight × process.
	ModeHybrid Mode = "hybrid"
	// ModeStepGroup is GiGPO's two-level credit (Feng et al. 2025, "Group-
	// in-Group Policy Optimization for LLM Agent Training", arXiv
	// 2505.10978, eq. 7-9): the episode advantage A^E_i of the outcome mode,
	// plus ProcessWeight × a step advantage A^S computed within anchor-state
	// groups. The steps of the group's trajectories that were taken from the
	// same state — the same prefix tokens: the prompt, and any identical
	// calls and results before them — form a step group; a step's return is
	// Σ_{j≥k} Gamma^(j−k) r_j over its trajectory's step rewards, and its
	// A^S is that return against the step group's (the configured
	// estimator); a step alone in its state gets A^S = 0. Unlike the
	// pooled process mode, a step is compared only with steps taken from
	// where it was, so a trajectory is not penalised for having more steps.
	ModeStepGroup Mode = "stepgroup"
	// ModeTurns is MT-GRPO's turn-level credit (Zeng et al. 2025,
	// "Reinforcing Multi-Turn Reasoning in LLM Agents via Turn-Level Credit
	// Assignment", arXiv 2505.11821, eq. 6): the answer's reward and the
	// turn rewards are normalised separately. A trajectory's outcome reward
	// O_i is its last step's reward (the answer turn: outcome, format, clip
	// and that turn's tool parts); its turn rewards T_{i,k} are the rewards
	// of its earlier steps (the calls' tool parts). Â^O is O against the
	// group's, Â^T_{i,k} is T_{i,k} against the k-th turn rewards of the
	// group's trajectories that have a k-th call turn (0 alone). A token of
	// an earlier turn k gets Â^O_i + ProcessWeight × Â^T_{i,k}, the answer
	// turn Â^O_i (MT-GRPO's Â^T + λÂ^O with λ = 1 at ProcessWeight 1).
	ModeTurns Mode = "turns"
)

// Estimator says how a reward is turned into an advantage against the group.
type Estimator string

// The baseline estimators.
const (
	// EstimatorGRPO subtracts the group mean and divides by the unbiased
	// standard deviation plus Eps (DeepSeekMath, Shao et al. 2024, eq. 3).
	EstimatorGRPO Estimator = "grpo"
	// EstimatorDrGRPO subtracts the group mean only (Dr.GRPO, Liu et al.
	// 2025, "Understanding R1-Zero-Like Training", section 3.2).
	EstimatorDrGRPO Estimator = "drgrpo"
	// EstimatorRLOO subtracts the mean of the other samples (REINFORCE
	// leave-one-out, Kool et al. 2019; Ahmadian et al. 2024).
	EstimatorRLOO Estimator = "rloo"
)

// KLEstimator names a per-token estimator of KL(π‖π_ref) from the sampled
// token's log-ratio d = log π(a) − log π_ref(a) (John Schulman, "Approximating
// KL Divergence", 2020).
type KLEstimator string

// The KL estimators.
const (
	// KLNone computes no KL term.
	KLNone KLEstimator = ""
	// KLK1 is d: unbiased, high variance, can be negative.
	KLK1 KLEstimator = "k1"
	// KLK2 is d²/2: biased, low variance, non-negative.
	KLK2 KLEstimator = "k2"
	// KLK3 is exp(−d) + d − 1: unbiased, low variance, non-negative
	// (verl's "low_var_kl", the GRPO paper's KL term).
	KLK3 KLEstimator = "k3"
)

// Constants of the formulas.
const (
	// LogRatioClamp bounds the log-ratio d to [−20, 20] before any KL
	// estimator, as verl (core_algos.kl_penalty) and SkyRL do.
	LogRatioClamp = 20.0
	// K3Clamp bounds k3 to [−10, 10], as verl's low_var_kl does.
	K3Clamp = 10.0
)

// Config is everything that decides how a group's advantages are computed.
// The zero value is not usable; start from DefaultConfig.
type Config struct {
	Mode      Mode
	Estimator Estimator
	// Eps is added to the standard deviation (GRPO estimator only).
	Eps float64
	// ProcessWeight scales the process advantages in ModeHybrid, the
	// step-group advantages in ModeStepGroup (GiGPO's ω) and the turn
	// advantages in ModeTurns.
	ProcessWeight float64
	// Gamma discounts later steps in the process advantage: a token of step k
	// gets Σ_{j≥k} Gamma^(j−k) r̃_j. 1 is DeepSeekMath's undiscounted sum.
	Gamma float64

	// KL selects the per-token KL estimator written into records; KLNone
	// writes none. Trajectories without ref_log_prob get no KL array.
	KL KLEstimator
	// KLCoef, when positive, folds the KL into the rewards before the
	// advantages are computed: R_i − KLCoef·Σ_t kl_t for the outcome reward,
	// and r_{i,k} − KLCoef·Σ_{t∈step k} kl_t for each step reward (in hybrid
	// mode both, so that each part estimates its KL-penalised reward; see
	// docs/advantage.md). Every trajectory then needs ref_log_prob.
	KLCoef float64

	// DropZeroVariance drops groups whose task rewards (before any KL is
	// folded in) are all equal: they carry no signal. They are always counted
	// in Stats.ZeroVariance.
	DropZeroVariance bool

	// KeepOutcomeSign keeps the answer's verdict the first thing a token's
	// advantage says: in a group that holds right and wrong answers (a
	// trajectory is right when its reward part "outcome" is positive), a
	// right answer's token advantages are raised to at least 0 and a wrong
	// one's lowered to at most 0, so that no cost part (a call's cost, a
	// failed call, the KL when KLCoef folds it into the reward; not the
	// learner's kl_beta term) pushes a right answer down, or a wrong one up,
	// next to the other kind: the sign reversal AdaTIR (Fang & Sun 2026,
	// arXiv 2601.14696) names. Groups with only right or only wrong answers,
	// and groups without outcome parts, keep their advantages.
	KeepOutcomeSign bool

	// MaxStaleness is the largest allowed CurrentPolicyVersion − group policy
	// version; negative disables the check.
	MaxStaleness int64
	// CurrentPolicyVersion is the trainer's policy version to check against.
	CurrentPolicyVersion int64
	// FlagStale keeps stale groups with Stale set on their records instead of
	// dropping them.
	FlagStale bool
}

// DefaultConfig is Spec's and StalenessSpec's declared defaults: outcome
// GRPO, eps 1e-6, no KL, no staleness check, process weight 1 and gamma 1.
func DefaultConfig() Config {
	c, err := Spec{}.Config(StalenessSpec{})
	if err != nil {
		panic("advantage: the declared defaults do not validate: " + err.Error()) // TestDefaultConfig
	}
	return c
}

// Validate reports the first unusable setting, naming it by its YAML key
// (Spec).
func (c *Config) Validate() error {
	return c.validate(func(key string) string { return "advantage config: " + key })
}

// validate is Validate with the settings named by name(key).
func (c *Config) validate(name func(key string) string) error {
	switch c.Mode {
	case ModeOutcome, ModeProcess, ModeHybrid, ModeStepGroup, ModeTurns:
	default:
		return fmt.Errorf("%s %q, want outcome, process, hybrid, stepgroup or turns", name("mode"), c.Mode)
	}
	switch c.Estimator {
	case EstimatorGRPO, EstimatorDrGRPO, EstimatorRLOO:
	default:
		return fmt.Errorf("%s %q, want grpo, drgrpo or rloo", name("estimator"), c.Estimator)
	}
	switch c.KL {
	case KLNone, KLK1, KLK2, KLK3:
	default:
		return fmt.Errorf("%s %q, want k1, k2 or k3", name("kl"), c.KL)
	}
	if !(c.Eps >= 0) || math.IsInf(c.Eps, 0) {
		return fmt.Errorf("%s %g, want a finite value ≥ 0", name("eps"), c.Eps)
	}
	if !(c.Gamma > 0 && c.Gamma <= 1) {
		return fmt.Errorf("%s %g, want in (0, 1]", name("gamma"), c.Gamma)
	}
	if math.IsNaN(c.ProcessWeight) || math.IsInf(c.ProcessWeight, 0) {
		return fmt.Errorf("%s %g is not finite", name("process_weight"), c.ProcessWeight)
	}
	if !(c.KLCoef >= 0) || math.IsInf(c.KLCoef, 0) {
		return fmt.Errorf("%s %g, want a finite value ≥ 0", name("kl_coef"), c.KLCoef)
	}
	if c.KLCoef > 0 && c.KL == KLNone {
		return fmt.Errorf("%s %g needs a KL estimator (k1, k2 or k3)", name("kl_coef"), c.KLCoef)
	}
	return nil
}
