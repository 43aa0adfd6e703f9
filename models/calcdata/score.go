package calcdata

import (
	"fmt"
	"regexp"
	"strings"
)

var answerRE = regexp.MustCompile(`The answer is (-?[0-9][0-9.,]*?)\.?\s*$`)

// ExtractAnswer returns N from a completion that ends with "The answer is N."
// (commas removed); ok is false when the completion does not end that way.
func ExtractAnswer(completion string) (answer string, ok bool) {
	m := answerRE.FindStringSubmatch(strings.TrimSpace(completion))
	if m == nil {
		return "", false
	}
	return strings.ReplaceAll(m[1], ",", ""), true
}

// SampleResult is what one evaluated sample did.
type SampleResult struct {
	Calls       int  // tool calls the sample made
	CallsParsed int  // of which parsed and ran without error
	Answered    bool // the completion ends with "The answer is N."
	Correct     bool // N equals the reference answer
}

// Metrics aggregates samples, grouped by prompt.
type Metrics struct {
	Prompts, Samples             int
	Calls, CallsParsed           int
	ToolSamples, ToolCorrect     int
	DirectSamples, DirectCorrect int
	Answered, Correct            int
	MixedGroups                  int // groups whose rewards (correctness) are not all equal
}

// AddGroup adds the G samples of one prompt.
func (m *Metrics) AddGroup(samples []SampleResult) {
	m.Prompts++
	right := 0
	for _, s := range samples {
		m.Samples++
		m.Calls += s.Calls
		m.CallsParsed += s.CallsParsed
		if s.Answered {
			m.Answered++
		}
		if s.Correct {
			m.Correct++
			right++
		}
		if s.Calls > 0 {
			m.ToolSamples++
			if s.Correct {
				m.ToolCorrect++
			}
		} else {
			m.DirectSamples++
			if s.Correct {
				m.DirectCorrect++
			}
		}
	}
	if right > 0 && right < len(samples) {
		m.MixedGroups++
	}
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// Report is a human-readable table of the measures and their targets.
func (m Metrics) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "prompts %d, samples %d\n", m.Prompts, m.Samples)
	fmt.Fprintf(&b, "calls that parse           %6.1f%%  (%d/%d)   target >= 90%%\n", pct(m.CallsParsed, m.Calls), m.CallsParsed, m.Calls)
	fmt.Fprintf(&b, "samples that call a tool   %6.1f%%  (%d/%d)   target 40-90%%\n", pct(m.ToolSamples, m.Samples), m.ToolSamples, m.Samples)
	fmt.Fprintf(&b, "accuracy, all samples      %6.1f%%  (%d/%d)   target >= 50%%\n", pct(m.Correct, m.Samples), m.Correct, m.Samples)
	fmt.Fprintf(&b, "  with a tool call         %6.1f%%  (%d/%d)\n", pct(m.ToolCorrect, m.ToolSamples), m.ToolCorrect, m.ToolSamples)
	fmt.Fprintf(&b, "  answering directly       %6.1f%%  (%d/%d)\n", pct(m.DirectCorrect, m.DirectSamples), m.DirectCorrect, m.DirectSamples)
	fmt.Fprintf(&b, "ends with 'The answer is N.' %4.1f%%  (%d/%d)\n", pct(m.Answered, m.Samples), m.Answered, m.Samples)
	fmt.Fprintf(&b, "groups with unequal rewards %5.1f%%  (%d/%d)   target >= 30%%\n", pct(m.MixedGroups, m.Prompts), m.MixedGroups, m.Prompts)
	return b.String()
}
