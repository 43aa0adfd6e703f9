package tools

import (
	"strings"

	"github.com/toolrl/toolrl/traj"
)

// Reward part names, as they appear in traj.Reward.Parts.
const (
	PartToolSuccess = "tool_success"
	PartToolUse     = "tool_use"
	PartCallCost    = "call_cost"
	PartInvalidCall = "invalid_call"
	PartOverCap     = "over_cap"
)

// RewardWeights weight the tool reward parts; each part is weight × count.
// The zero value turns every part off; DefaultRewardWeights gives the defaults.
type RewardWeights struct {
	// ToolSuccess per call that parsed and executed ok.
	ToolSuccess float64 `yaml:"tool_success" json:"tool_success"`
	// ToolUse per successful call whose result appears in later model text.
	ToolUse float64 `yaml:"tool_use" json:"tool_use"`
	// CallCost per call the model wrote, whatever became of it (negative).
	CallCost float64 `yaml:"call_cost" json:"call_cost"`
	// InvalidCall per call that failed to parse or validate (negative).
	InvalidCall float64 `yaml:"invalid_call" json:"invalid_call"`
	// OverCap per call past the per-turn or per-trajectory cap (negative).
	OverCap float64 `yaml:"over_cap" json:"over_cap"`
}

// DefaultRewardWeights are tool_success 0.1, tool_use 0.2, call_cost -0.1,
// invalid_call -0.2, over_cap -0.3.
func DefaultRewardWeights() RewardWeights {
	return RewardWeights{ToolSuccess: 0.1, ToolUse: 0.2, CallCost: -0.1, InvalidCall: -0.2, OverCap: -0.3}
}

// ToolRewards are the tool reward parts of one trajectory.
type ToolRewards struct {
	// Parts holds every part name, weighted and summed over the calls.
	Parts map[string]float64
	// Steps has one entry per model segment, in order: the weighted parts of
	// the call that segment ended in (0 for a segment without a call).
	Steps []float64
	// Counts per outcome, unweighted.
	Calls, Succeeded, Used, Invalid, OverCap int
}

// Total is the sum of the parts.
func (r ToolRewards) Total() float64 {
	t := 0.0
	for _, v := range r.Parts {
		t += v
	}
	return t
}

// ComputeRewards scores the calls of a trajectory's segments. A call is read
// from a model segment that ended in one (Segment.Call) and its result from
// the tool segment right after it (Segment.Result); a call with no result
// (e.g. unterminated at the end of the text) still counts. Classes come from
// ParseError (its class prefix) and Result.ErrorClass. A result is "used"
// when it appears in the Text of a later model segment: a numeric result
// (digits, sign, point, thousands separators) as a whole number, not inside
// a longer one, with separators ignored on both sides; other content of at
// most 80 bytes verbatim; longer content when any number of two or more
// digits in it appears. It is a pure function of its inputs.
func ComputeRewards(segs []traj.Segment, w RewardWeights) ToolRewards {
	out := ToolRewards{Parts: map[string]float64{
		PartToolSuccess: 0, PartToolUse: 0, PartCallCost: 0, PartInvalidCall: 0, PartOverCap: 0,
	}}
	step := -1
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		if s.Kind == traj.SegmentModel {
			step++
			out.Steps = append(out.Steps, 0)
		}
		var call *traj.ToolCall
		var result *traj.ToolResult
		next := i + 1
		switch {
		case s.Kind == traj.SegmentModel && s.Call != nil:
			call = s.Call
			if next < len(segs) && segs[next].Kind == traj.SegmentTool {
				result = segs[next].Result
				next++
				i++ // the tool segment is consumed with its call
			}
		case s.Kind == traj.SegmentTool && s.Result != nil:
			// A tool segment whose model segment did not record the call.
			call, result = s.Call, s.Result
			if call == nil {
				call = &traj.ToolCall{}
			}
		default:
			continue
		}
		r := 0.0
		out.Calls++
		r += w.CallCost
		out.Parts[PartCallCost] += w.CallCost
		class := callClass(call, result)
		switch {
		case class == ClassOverCap:
			out.OverCap++
			r += w.OverCap
			out.Parts[PartOverCap] += w.OverCap
		case IsParseClass(class):
			out.Invalid++
			r += w.InvalidCall
			out.Parts[PartInvalidCall] += w.InvalidCall
		case result != nil && result.OK:
			out.Succeeded++
			r += w.ToolSuccess
			out.Parts[PartToolSuccess] += w.ToolSuccess
			if resultUsed(result.Content, laterText(segs[next:])) {
				out.Used++
				r += w.ToolUse
				out.Parts[PartToolUse] += w.ToolUse
			}
		}
		if step < 0 { // a tool segment before any model segment
			continue
		}
		out.Steps[step] += r
	}
	return out
}

func callClass(c *traj.ToolCall, r *traj.ToolResult) string {
	if c.ParseError != "" {
		class, _, _ := strings.Cut(c.ParseError, ":")
		return strings.TrimSpace(class)
	}
	if r != nil {
		return r.ErrorClass
	}
	return ""
}

func laterText(segs []traj.Segment) string {
	var b strings.Builder
	for _, s := range segs {
		if s.Kind == traj.SegmentModel {
			b.WriteString(s.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func resultUsed(content, later string) bool {
	content = strings.TrimSpace(content)
	if content == "" || later == "" {
		return false
	}
	plain := strings.ReplaceAll(later, ",", "")
	if isNumberish(content) {
		return containsNumber(plain, strings.ReplaceAll(content, ",", ""))
	}
	if len(content) <= 80 {
		return strings.Contains(later, content)
	}
	for _, num := range numbersIn(content) {
		if len(strings.TrimLeft(num, "-")) >= 2 && containsNumber(plain, num) {
			return true
		}
	}
	return false
}

func isNumberish(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c == '.' || c == '-' || c == ',') {
			return false
		}
	}
	return true
}

// numbersIn returns the decimal numbers in s, thousands separators removed.
func numbersIn(s string) []string {
	var nums []string
	s = strings.ReplaceAll(s, ",", "")
	for i := 0; i < len(s); {
		if s[i] >= '0' && s[i] <= '9' {
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' && j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9') {
				j++
			}
			start := i
			if start > 0 && s[start-1] == '-' {
				start--
			}
			nums = append(nums, s[start:j])
			i = j
			continue
		}
		i++
	}
	return nums
}

// containsNumber reports whether num occurs in text not as part of a longer
// number (so "40" is not found in "408").
func containsNumber(text, num string) bool {
	for off := 0; ; {
		k := strings.Index(text[off:], num)
		if k < 0 {
			return false
		}
		start, end := off+k, off+k+len(num)
		before := start == 0 || !isDigit(text[start-1])
		after := end == len(text) || !(isDigit(text[end]) || text[end] == '.' && end+1 < len(text) && isDigit(text[end+1]))
		if before && after {
			return true
		}
		off = start + 1
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
