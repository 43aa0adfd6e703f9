package reward

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strings"

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
	// Outcome is paid when the extracted answer equals the reference. Default 1.
	Outcome *float64 `yaml:"outcome"`
	// Format is paid when the response ends cleanly (EOS) with an explicitly
	// marked answer ("The answer is N", \boxed{N} or the regex) and has no
	// invalid call. Default 0.1.
	Format *float64 `yaml:"format"`
	// The tool parts, per call (defaults from DefaultToolWeights:
	// tool_success 0, tool_use 0, call_cost -0.1, tool_failure -0.2,
	// invalid_call -0.2, over_cap -0.3).
	ToolSuccess *float64 `yaml:"tool_success"`
	ToolUse     *float64 `yaml:"tool_use"`
	CallCost    *float64 `yaml:"call_cost"`
	ToolFailure *float64 `yaml:"tool_failure"`
	InvalidCall *float64 `yaml:"invalid_call"`
	OverCap     *float64 `yaml:"over_cap"`
	// MaxToolPenalty is the most the tool parts together may take from a
	// trajectory whose answer is right (≥ 0; default 0.8); the excess comes
	// back as the part penalty_clip. With the defaults a right answer then
	// scores at least 1 - 0.8 = 0.2, above the best wrong one (0.1, format
	// alone), whatever its calls. Set it large (e.g. 1e9) for no clip.
	MaxToolPenalty *float64 `yaml:"max_tool_penalty"`

	// Extract lists the answer extractors tried in order: boxed, answer_is,
	// regex, last_number. Default [boxed, answer_is, last_number], with regex
	// before last_number when Regex is set.
	Extract []string `yaml:"extract"`
	// Regex is a custom extractor; its first capture group (or whole match) is
	// the answer, and the last match in the text wins.
	Regex string `yaml:"regex"`
	// Tolerance is the absolute tolerance for numeric answers. Default 1e-6.
	Tolerance float64 `yaml:"tolerance"`

	regex *regexp.Regexp
}

// DefaultMaxToolPenalty is Config.MaxToolPenalty's default: above the
// 0.7 that three calls (the default max_tool_calls) take at worst while one
// of them succeeds, so that within that cap a failed call still scores below
// a successful one; below outcome − format (0.9), so that a right answer
// still scores above every wrong one.
const DefaultMaxToolPenalty = 0.8

func ptr(v float64) *float64 { return &v }

func (c *Config) Normalize() error {
	d := DefaultToolWeights()
	for _, f := range []struct {
		p   **float64
		def float64
	}{
		{&c.Outcome, 1}, {&c.Format, 0.1}, {&c.ToolSuccess, d.ToolSuccess}, {&c.ToolUse, d.ToolUse},
		{&c.CallCost, d.CallCost}, {&c.ToolFailure, d.ToolFailure}, {&c.InvalidCall, d.InvalidCall},
		{&c.OverCap, d.OverCap}, {&c.MaxToolPenalty, DefaultMaxToolPenalty},
	} {
		if *f.p == nil {
			*f.p = ptr(f.def)
		}
	}
	if *c.MaxToolPenalty < 0 || math.IsNaN(*c.MaxToolPenalty) {
		return fmt.Errorf("rewards.max_tool_penalty: %g, want ≥ 0", *c.MaxToolPenalty)
	}
	if c.Tolerance == 0 {
		c.Tolerance = 1e-6
	}
	if c.Tolerance < 0 {
		return fmt.Errorf("rewards.tolerance: %g, want ≥ 0", c.Tolerance)
	}
	if c.Regex != "" {
		re, err := regexp.Compile(c.Regex)
		if err != nil {
			return fmt.Errorf("rewards.regex: %w", err)
		}
		c.regex = re
	}
	if len(c.Extract) == 0 {
		c.Extract = []string{"boxed", "answer_is", "last_number"}
		if c.regex != nil {
			c.Extract = []string{"boxed", "answer_is", "regex", "last_number"}
		}
	}
	for i, e := range c.Extract {
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
	return ToolWeights{ToolSuccess: *c.ToolSuccess, ToolUse: *c.ToolUse, CallCost: *c.CallCost,
		ToolFailure: *c.ToolFailure, InvalidCall: *c.InvalidCall, OverCap: *c.OverCap}
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
	for _, e := range c.Extract {
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
		return f <= c.Tolerance
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
	if correct {
		parts[PartOutcome] = *c.Outcome
	}
	parts[PartFormat] = 0
	if t.FinishReason == traj.FinishStop && ex.Marked() && tr.Invalid == 0 {
		parts[PartFormat] = *c.Format
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
	if limit := *c.MaxToolPenalty; correct && toolSum < -limit-1e-9 {
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
