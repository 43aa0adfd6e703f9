package reward

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/traj"
)

// Reward part names Config.Score adds to the tool parts of ComputeToolRewards.
const (
	PartOutcome = "outcome"
	PartFormat  = "format"
	// PartPenaltyClip gives back what the tool parts of a trajectory with
	// the right answer take beyond MaxToolPenalty (≥ 0; 0 otherwise).
	PartPenaltyClip = "penalty_clip"
)

// PartNames lists every part Config.Score can write, in a fixed order: a
// Parquet file of rollouts gets a column for each (export's reward_<part>
// columns), whatever its first rows hold.
func PartNames() []string {
	return append(append([]string{PartOutcome, PartFormat}, partOrder...), PartPenaltyClip)
}

// Config weights the reward parts and says how answers are extracted.
// An unset weight takes its default; write 0 to turn a part off.
//
// The defaults make a call pay only through a right answer: no part rewards
// calling as such, every call costs 0.1, a call that fails or is invalid
// 0.3, and a right answer always scores above a wrong one (AdaTIR's "sign
// reversal", where tool penalties outweigh correctness, cannot happen).
type Config struct {
	// Outcome is paid when the extracted answer equals the reference.
	Outcome setting.Value[float64] `yaml:"outcome" default:"1" usage:"paid when the extracted answer equals the reference"`
	// Format is paid when the response ends cleanly (EOS) with an explicitly
	// marked answer ("The answer is N", \boxed{N} or the regex) and has no
	// invalid call.
	Format setting.Value[float64] `yaml:"format" default:"0.1" usage:"paid when the response ends cleanly with a marked answer and no invalid call"`
	// The tool parts, per call (DefaultToolWeights are these defaults).
	ToolSuccess setting.Value[float64] `yaml:"tool_success" default:"0" usage:"per call that parsed and executed ok"`
	ToolUse     setting.Value[float64] `yaml:"tool_use" default:"0" usage:"per successful call whose result the model's later text uses"`
	CallCost    setting.Value[float64] `yaml:"call_cost" default:"-0.1" usage:"per call the model wrote, whatever became of it"`
	ToolFailure setting.Value[float64] `yaml:"tool_failure" default:"-0.2" usage:"per call that ran and did not succeed (timeout, tool error, panic, canceled)"`
	InvalidCall setting.Value[float64] `yaml:"invalid_call" default:"-0.2" usage:"per call that failed to parse or validate, or named no tool"`
	OverCap     setting.Value[float64] `yaml:"over_cap" default:"-0.3" usage:"per call past a per-turn or per-trajectory cap"`
	// MaxToolPenalty is the most the tool parts together may take from a
	// trajectory whose answer is right (≥ 0; see DefaultMaxToolPenalty); the
	// excess comes back as the part penalty_clip. With the defaults a right
	// answer then scores at least 1 - 0.8 = 0.2, above the best wrong one
	// (0.1, format alone), whatever its calls. Set it large (e.g. 1e9) for
	// no clip.
	MaxToolPenalty setting.Value[float64] `yaml:"max_tool_penalty" default:"0.8" usage:"most the tool parts may take from a right answer (≥ 0); the excess comes back as penalty_clip"`
	// CallCostForm is how calls cost: "additive", call_cost per call (the
	// design's −0.1), or "multiplicative", OTC's tool-integrated reward
	// (Wang et al. 2025, arXiv 2504.14870, OTC-PPO): a right answer's
	// outcome is multiplied by f(m) = cos(m·π / (2m + c)) for its m calls
	// (1 without calls, falling towards 0 with more), c = CallCostC, and no
	// per-call cost is charged. The factor's share and the tool parts
	// together take at most max_tool_penalty from a right answer (the clip),
	// so a right answer still scores above every wrong one.
	CallCostForm setting.Value[string] `yaml:"call_cost_form" default:"additive" usage:"additive (call_cost per call) | multiplicative (OTC: a right answer's outcome × cos(m·π/(2m + call_cost_c)) for m calls)"`
	// CallCostC is OTC's smoothing constant c (> 0; larger decays slower).
	// No default: the paper leaves it a hyperparameter; the multiplicative
	// form needs it.
	CallCostC setting.Value[float64] `yaml:"call_cost_c" usage:"OTC's smoothing constant c > 0 of the multiplicative form (required with it)"`

	// Extract lists the answer extractors tried in order: boxed, answer_is,
	// regex, last_number. Default [boxed, answer_is, last_number], with regex
	// before last_number when Regex is set.
	Extract setting.Value[[]string] `yaml:"extract" usage:"answer extractors in order: boxed, answer_is, regex, last_number (default: boxed, answer_is[, regex], last_number)"`
	// Regex is a custom extractor; its first capture group (or whole match) is
	// the answer, and the last match in the text wins.
	Regex setting.Value[string] `yaml:"regex" usage:"a custom answer extractor: its first group (or whole match), the last match wins"`
	// Tolerance is the absolute tolerance for numeric answers (0: exact).
	Tolerance setting.Value[float64] `yaml:"tolerance" default:"1e-6" usage:"absolute tolerance of numeric answers (0: exact)"`

	regex *regexp.Regexp
}

// DefaultMaxToolPenalty is Config.MaxToolPenalty's default: above the
// 0.7 that three calls (the default max_tool_calls) take at worst while one
// of them succeeds, so that within that cap a failed call still scores below
// a successful one; below outcome − format (0.9), so that a right answer
// still scores above every wrong one.
const DefaultMaxToolPenalty = 0.8

// Normalize applies the declared defaults to the unset keys and checks the
// values, naming the key at fault.
func (c *Config) Normalize() error {
	if err := setting.ApplyDefaults(c); err != nil {
		return fmt.Errorf("rewards: %w", err)
	}
	for _, f := range setting.Fields(c) {
		if f.Type == "float" {
			if v, err := strconv.ParseFloat(f.Text(), 64); err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
				return fmt.Errorf("rewards.%s: %s, want a finite value", f.Key, f.Text())
			}
		}
	}
	if p := c.MaxToolPenalty.Get(); p < 0 {
		return fmt.Errorf("rewards.max_tool_penalty: %g, want ≥ 0", p)
	}
	switch c.CallCostForm.Get() {
	case "additive":
		if c.CallCostC.IsSet() {
			return fmt.Errorf("rewards.call_cost_c: only the multiplicative call_cost_form uses it")
		}
	case "multiplicative":
		if !c.CallCostC.IsSet() || !(c.CallCostC.Get() > 0) {
			return fmt.Errorf("rewards.call_cost_c: %s, want > 0 with call_cost_form: multiplicative (OTC's smoothing constant; no default)", c.CallCostC.String())
		}
		if c.CallCost.Source() != setting.Default {
			return fmt.Errorf("rewards.call_cost: the multiplicative call_cost_form replaces the per-call cost; remove the key")
		}
	default:
		return fmt.Errorf("rewards.call_cost_form: %q, want additive or multiplicative", c.CallCostForm.Get())
	}
	if t := c.Tolerance.Get(); t < 0 {
		return fmt.Errorf("rewards.tolerance: %g, want ≥ 0 (0: exact)", t)
	}
	if c.Regex.Get() != "" {
		re, err := regexp.Compile(c.Regex.Get())
		if err != nil {
			return fmt.Errorf("rewards.regex: %w", err)
		}
		c.regex = re
	}
	if len(c.Extract.Get()) == 0 {
		extract := []string{"boxed", "answer_is", "last_number"}
		if c.regex != nil {
			extract = []string{"boxed", "answer_is", "regex", "last_number"}
		}
		c.Extract.Set(extract, setting.Default)
	}
	for i, e := range c.Extract.Get() {
		switch e {
		case "boxed", "answer_is", "last_number":
		case "regex":
			if c.regex == nil {
				return fmt.Errorf("rewards.extract[%d]: regex needs rewards.regex", i)
			}
		default:
			return fmt.Errorf("rewards.extract[%d]: unknown extractor %q (want boxed, answer_is, regex, last_number)", i, e)
		}
	}
	return nil
}

func (c *Config) toolWeights() ToolWeights {
	w := ToolWeights{ToolSuccess: c.ToolSuccess.Get(), ToolUse: c.ToolUse.Get(), CallCost: c.CallCost.Get(),
		ToolFailure: c.ToolFailure.Get(), InvalidCall: c.InvalidCall.Get(), OverCap: c.OverCap.Get()}
	if c.multiplicative() {
		w.CallCost = 0 // the calls cost through the outcome (callFactor)
	}
	return w
}

func (c *Config) multiplicative() bool { return c.CallCostForm.Get() == "multiplicative" }

// callFactor is what a right answer's outcome is multiplied by for its
// calls: 1 in the additive form; OTC-PPO's cos(m·π / (2m + c)) in the
// multiplicative one (arXiv 2504.14870), which is 1 for no call and stays
// above 0 for any m since m·π/(2m + c) < π/2.
func (c *Config) callFactor(calls int) float64 {
	if !c.multiplicative() {
		return 1
	}
	m := float64(calls)
	return math.Cos(m * math.Pi / (2*m + c.CallCostC.Get()))
}

var (
	boxedPattern    = regexp.MustCompile(`\\boxed\{([^{}]*)\}`)
	answerIsPattern = regexp.MustCompile(`(?i)the (?:final )?answer is[:\s]*\$?\s*(-?[0-9][0-9,]*(?:\.[0-9]+)?(?:/[0-9]+)?|[^\s.]+)`)
	numberPattern   = regexp.MustCompile(`-?[0-9][0-9,]*(?:\.[0-9]+)?`)
)

// Extraction is the answer found in a response, and by which extractor.
type Extraction struct {
	Answer string
	By     string // boxed | answer_is | regex | last_number | "" (none)
}

// Marked reports whether the answer was explicitly marked (not just the last number).
func (e Extraction) Marked() bool { return e.By != "" && e.By != "last_number" }

// ExtractAnswer applies the configured extractors in order to the model's own
// text (tool results are not part of it, so a call's result alone never counts
// as an answer).
func (c *Config) ExtractAnswer(text string) Extraction {
	for _, e := range c.Extract.Get() {
		var m string
		switch e {
		case "boxed":
			m = lastGroup(boxedPattern, text)
		case "answer_is":
			m = lastGroup(answerIsPattern, text)
		case "regex":
			if c.regex != nil {
				m = lastGroup(c.regex, text)
			}
		case "last_number":
			if all := numberPattern.FindAllString(text, -1); len(all) > 0 {
				m = all[len(all)-1]
			}
		}
		if m = strings.TrimSpace(m); m != "" {
			return Extraction{Answer: m, By: e}
		}
	}
	return Extraction{}
}

func lastGroup(re *regexp.Regexp, text string) string {
	all := re.FindAllStringSubmatch(text, -1)
	if len(all) == 0 {
		return ""
	}
	last := all[len(all)-1]
	if len(last) > 1 {
		return last[1]
	}
	return last[0]
}

// AnswerMatches compares an extracted answer with the reference: numerically
// (exact rationals, thousands separators ignored, within Tolerance) when both
// parse as numbers, else as trimmed case-insensitive strings.
func (c *Config) AnswerMatches(got, want string) bool {
	got, want = strings.TrimSpace(got), strings.TrimSpace(want)
	if got == "" || want == "" {
		return false
	}
	g, gok := parseNumber(got)
	w, wok := parseNumber(want)
	if gok && wok {
		diff := new(big.Rat).Sub(g, w)
		f, _ := diff.Abs(diff).Float64()
		return f <= c.Tolerance.Get()
	}
	return strings.EqualFold(strings.TrimRight(got, "."), strings.TrimRight(want, "."))
}

func parseNumber(s string) (*big.Rat, bool) {
	s = strings.TrimSuffix(strings.ReplaceAll(strings.TrimSpace(s), ",", ""), ".")
	s = strings.TrimPrefix(s, "$")
	if s == "" {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// Score fills t.Reward and t.StepRewards from the trajectory's segments and
// the reference answer. StepRewards has one entry per step, an assistant
// turn (traj.Trajectory.Steps): the sum of the tool parts of the calls that
// turn made (ComputeToolRewards, every call scored on its own); outcome,
// format and penalty_clip are paid to the last step, whose turn ends the
// answer. With one call per turn a step is a model segment, as before
// parallel calls. The total is the sum of the step rewards. It returns
// whether the outcome was correct.
func (c *Config) Score(t *traj.Trajectory, answer string) bool {
	tr := ComputeToolRewards(t.Segments, c.toolWeights())
	parts := make(map[string]float64, len(tr.Parts)+3)
	for k, v := range tr.Parts {
		parts[k] = v
	}
	var modelText strings.Builder
	for _, s := range t.Segments {
		if s.Kind == traj.SegmentModel {
			modelText.WriteString(s.Text)
		}
	}
	ex := c.ExtractAnswer(modelText.String())
	correct := ex.By != "" && c.AnswerMatches(ex.Answer, answer)
	parts[PartOutcome] = 0
	factor := c.callFactor(tr.Calls)
	if correct {
		parts[PartOutcome] = c.Outcome.Get()
		if factor != 1 {
			parts[PartOutcome] = roundTo(c.Outcome.Get()*factor, 12)
		}
	}
	parts[PartFormat] = 0
	if t.FinishReason == traj.FinishStop && ex.Marked() && tr.Invalid == 0 {
		parts[PartFormat] = c.Format.Get()
	}
	steps := tr.Steps
	toolSum := 0.0
	for _, v := range steps { // in order, so that the sum is the same every run
		toolSum += v
	}
	if len(steps) == 0 {
		toolSum = tr.Total()
		steps = []float64{toolSum}
	}
	// Correctness first (AdaTIR's clipped shaping, applied to the reward): the
	// tool parts of a right answer take at most MaxToolPenalty. The 1e-9 keeps
	// float noise from producing a clip of 1e-17.
	parts[PartPenaltyClip] = 0
	// In the multiplicative form the call factor's share counts towards
	// the same limit: a right answer keeps at least outcome −
	// max_tool_penalty, as in the additive form.
	if limit := c.MaxToolPenalty.Get() - (c.Outcome.Get() - parts[PartOutcome]); correct && toolSum < -limit-1e-9 {
		parts[PartPenaltyClip] = roundTo(-limit-toolSum, 12)
	}
	steps[len(steps)-1] += parts[PartOutcome] + parts[PartFormat] + parts[PartPenaltyClip]
	total := 0.0
	for _, v := range steps {
		total += v
	}
	// Summing steps and summing parts differ only in float rounding; the total
	// is the sum of the steps so that the two views agree exactly.
	t.Reward = traj.Reward{Total: roundTo(total, 12), Parts: parts}
	if t.Steps() == 0 {
		t.StepRewards = nil
	} else {
		t.StepRewards = steps
	}
	return correct
}

func roundTo(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
