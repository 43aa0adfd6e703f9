package calcdata

import (
	"math/rand/v2"
	"strconv"
)

// Segment is one span of a training completion. Model segments are what the
// policy writes (loss on); Tool segments are what the environment injects after
// a call (loss masked out, as in RL).
type Segment struct {
	Text string
	Tool bool
}

// Example is one training (or evaluation) item: a problem and its completion.
type Example struct {
	Problem
	// Segments is the completion after the rendered prompt, in order. A tool
	// example is: model ` [CALC: expr]`, tool ` = result`, model `. The answer is N.`;
	// a direct example is one model segment ` The answer is N.`.
	Segments []Segment
	// Direct is true when the completion answers without a tool.
	Direct bool
	// Correct is false for a direct guess on a hard problem.
	Correct bool
}

// Mix sets the data mix. The zero value is not useful; use DefaultMix.
type Mix struct {
	// EasyRate is the fraction of problems drawn easy (one operation on operands
	// 1–5; see Problem.Easy).
	EasyRate float64
	// DirectEasy is the fraction of easy problems answered directly (always correctly).
	DirectEasy float64
	// DirectHard is the fraction of other problems answered directly, with a plausible guess.
	DirectHard float64
	// ErrorRate is the fraction of tool examples whose first call fails: the
	// environment injects a tool error (ErrorText) and the policy then calls
	// again with the same expression (and gets the result), or, on an easy
	// problem with probability AnswerAfterError, answers directly and right.
	// 0 (DefaultMix) draws nothing extra, so the stream is DefaultMix's.
	ErrorRate float64
	// AnswerAfterError is the fraction of failed calls on easy problems that
	// are followed by a direct answer instead of a second call.
	AnswerAfterError float64
}

// DefaultMix gives about 22% direct answers, most of them easy and correct.
func DefaultMix() Mix { return Mix{EasyRate: 0.3, DirectEasy: 0.55, DirectHard: 0.08} }

// OvercallMix is the mix of models/calc-overcall (docs/calc.md, "A second
// policy"): more easy problems (so each small arithmetic fact is answered
// directly under more templates), fewer of them answered directly in the data
// (so the policy calls on most easy prompts), half the hard guesses (which
// teach that a direct answer is a number near the right one), and 10% of
// tool examples that recover from a tool error.
func OvercallMix() Mix {
	return Mix{EasyRate: 0.6, DirectEasy: 0.4, DirectHard: 0.04, ErrorRate: 0.1, AnswerAfterError: 0.5}
}

// ErrorTexts are the tool errors injected in ErrorRate examples, as the
// environment writes them (the executor's tool_error and timeout contents
// for the calculator, tools' faults: docs/tools.md).
var ErrorTexts = []string{
	"error: tool_error: calculator: service unavailable",
	"error: timeout: calculator did not finish within 3s",
}

// Template is the prompt format shipped in models/calc/prompt_format.json;
// "{prompt}" is replaced by the problem text.
const Template = "Question: {prompt}\nAnswer:"

// CallName is the bracket name the policy writes: `[CALC: <expr>]`.
const CallName = "CALC"

// Render returns the prompt text the policy sees for a problem.
func Render(prompt string) string {
	const key = "{prompt}"
	for i := 0; i+len(key) <= len(Template); i++ {
		if Template[i:i+len(key)] == key {
			return Template[:i] + prompt + Template[i+len(key):]
		}
	}
	return Template
}

// CallText is the model text of a tool call for expr, including the leading space.
func CallText(expr string) string { return " [" + CallName + ": " + expr + "]" }

// InjectedText is the text the environment appends right after the closing `]`
// of a bracket call whose result is result (tools' bracket form: " = <result>").
func InjectedText(result string) string { return " = " + result }

// AnswerSentence is the final sentence of a completion, with its leading text.
func AnswerSentence(answer string) string { return " The answer is " + answer + "." }

// Complete builds the completion of p from r under mix.
func Complete(r *rand.Rand, p Problem, mix Mix) Example {
	rate := mix.DirectHard
	if p.Easy {
		rate = mix.DirectEasy
	}
	ex := Example{Problem: p, Correct: true}
	if r.Float64() < rate {
		ex.Direct = true
		answer := p.AnswerText()
		if !p.Easy {
			g := guess(r, p.Answer)
			ex.Correct = g == p.Answer
			answer = strconv.FormatInt(g, 10)
		}
		ex.Segments = []Segment{{Text: AnswerSentence(answer)}}
		return ex
	}
	ex.Segments = []Segment{
		{Text: CallText(p.Expr)},
		{Text: InjectedText(p.AnswerText()), Tool: true},
		{Text: "." + AnswerSentence(p.AnswerText())},
	}
	if mix.ErrorRate > 0 && r.Float64() < mix.ErrorRate {
		failed := []Segment{{Text: CallText(p.Expr)}, {Text: InjectedText(ErrorTexts[r.IntN(len(ErrorTexts))]), Tool: true}}
		if p.Easy && r.Float64() < mix.AnswerAfterError {
			ex.Segments = append(failed, Segment{Text: "." + AnswerSentence(p.AnswerText())})
		} else {
			ex.Segments = append(failed, ex.Segments...)
		}
	}
	return ex
}

// guess returns a plausible but usually wrong answer near v: same magnitude,
// off by up to 20%.
func guess(r *rand.Rand, v int64) int64 {
	if v < 10 {
		g := v + 1 + r.Int64N(3)
		if r.IntN(2) == 0 && v > 3 {
			g = v - 1 - r.Int64N(3)
		}
		return g
	}
	f := 0.8 + 0.4*r.Float64()
	g := int64(float64(v) * f)
	if g == v {
		g++
	}
	return g
}

// Text returns the whole completion text (model and tool segments concatenated).
func (e Example) Text() string {
	s := ""
	for _, seg := range e.Segments {
		s += seg.Text
	}
	return s
}
