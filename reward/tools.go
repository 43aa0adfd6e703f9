package reward

import (
	"strings"

	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// Reward part names, as they appear in traj.Reward.Parts.
const (
	PartToolSuccess = "tool_success"
	PartToolUse     = "tool_use"
	PartCallCost    = "call_cost"
	PartToolFailure = "tool_failure"
	PartInvalidCall = "invalid_call"
	PartOverCap     = "over_cap"
)

// partOrder is the order in which ToolRewards.Total sums the parts, so that
// the sum does not depend on map iteration.
var partOrder = []string{PartToolSuccess, PartToolUse, PartCallCost, PartToolFailure, PartInvalidCall, PartOverCap}

// ToolWeights weight the tool reward parts; each part is weight × count.
// The zero value turns every part off; DefaultToolWeights gives the defaults.
type ToolWeights struct {
	// ToolSuccess per call that parsed and executed ok.
	ToolSuccess float64 `yaml:"tool_success" json:"tool_success"`
	// ToolUse per successful call whose result the model's later text uses
	// (see ResultUsed).
	ToolUse float64 `yaml:"tool_use" json:"tool_use"`
	// CallCost per call the model wrote, whatever became of it (negative).
	CallCost float64 `yaml:"call_cost" json:"call_cost"`
	// ToolFailure per call that was run and did not succeed: timeout,
	// tool_error, panic, canceled (negative).
	ToolFailure float64 `yaml:"tool_failure" json:"tool_failure"`
	// InvalidCall per call that failed to parse or validate, or whose
	// arguments the tool rejected (invalid_args) (negative).
	InvalidCall float64 `yaml:"invalid_call" json:"invalid_call"`
	// OverCap per call past the per-turn or per-trajectory cap (negative).
	OverCap float64 `yaml:"over_cap" json:"over_cap"`
}

// DefaultToolWeights are tool_success 0, tool_use 0, call_cost -0.1,
// tool_failure -0.2, invalid_call -0.2, over_cap -0.3: a call never pays for
// itself, a call that succeeds costs 0.1, one that fails or is invalid 0.3,
// one past a cap 0.4. A call earns reward only through the final answer it
// helps to get right (the outcome part of the orchestrator's Config).
// They are Config's declared defaults (one definition).
func DefaultToolWeights() ToolWeights {
	var c Config
	if err := setting.ApplyDefaults(&c); err != nil {
		panic(err) // the declarations' defaults parse; a test checks them
	}
	return c.toolWeights()
}

// ToolRewards are the tool reward parts of one trajectory.
type ToolRewards struct {
	// Parts holds every part name, weighted and summed over the calls.
	Parts map[string]float64
	// Steps has one entry per step, in order: an assistant turn, as
	// traj.Trajectory.Steps counts them (a model segment that begins a
	// turn). Each holds the weighted parts of the calls that turn made (0
	// for a turn without calls). The parts of a tool segment before any
	// model segment go to the first step.
	Steps []float64
	// Counts per outcome, unweighted. A call recorded but not run (no result,
	// no error class, e.g. in the last allowed turn) counts only in Calls.
	Calls, Succeeded, Used, Failed, Invalid, OverCap int
}

// Total is the sum of the parts, in a fixed order.
func (r ToolRewards) Total() float64 {
	t := 0.0
	for _, k := range partOrder {
		t += r.Parts[k]
	}
	return t
}

// ComputeToolRewards scores the calls of a trajectory's segments, laid out as
// traj.Segment describes: a turn's calls are read from its model segments
// (Segment.Call, one per segment, in order) and call i's result from the
// turn's i-th tool segment (Segment.Result); a call with no tool segment
// (the trajectory ended first, or the call was unterminated at the end of
// the text) still counts. Every call keeps its own parts, so a malformed
// call among valid ones of the same turn is penalised alone. Classes come
// from ParseError (its class prefix) and Result.ErrorClass:
//
//   - over_cap: call_cost + over_cap;
//   - a parse class (unterminated, bad_json, unknown_tool, schema, too_long)
//     or invalid_args (the tool rejected the arguments, e.g. a calculator
//     argument that is not an arithmetic expression): call_cost + invalid_call;
//   - ok: call_cost + tool_success, + tool_use when ResultUsed says the
//     model segments after the turn's tool segments use the result;
//   - any other failure (timeout, tool_error, panic, canceled): call_cost +
//     tool_failure;
//   - no result and no class (recorded, not run): call_cost.
//
// A tool segment with a result in a turn whose model segment recorded no
// call (data written so before parallel calls) is scored as a call of its
// own (its Call, or an empty one). Each call's parts go to the step (turn)
// that wrote it, summed in call order. With one call per turn this is the
// per-model-segment scoring toolrl did before, value for value. It is a
// pure function of its inputs.
func ComputeToolRewards(segs []traj.Segment, w ToolWeights) ToolRewards {
	out := ToolRewards{Parts: make(map[string]float64, len(partOrder))}
	for _, k := range partOrder {
		out.Parts[k] = 0
	}
	step := -1
	pending := 0.0 // parts of tool segments before the first model segment
	score := func(call *traj.ToolCall, result *traj.ToolResult, later []traj.Segment) {
		r := 0.0
		add := func(part string, v float64) {
			r += v
			out.Parts[part] += v
		}
		out.Calls++
		add(PartCallCost, w.CallCost)
		switch class := callClass(call, result); {
		case class == tools.ClassOverCap:
			out.OverCap++
			add(PartOverCap, w.OverCap)
		case tools.IsParseClass(class) || class == tools.ClassInvalidArgs:
			out.Invalid++
			add(PartInvalidCall, w.InvalidCall)
		case result == nil:
			// Recorded but not run: only the cost.
		case result.OK:
			out.Succeeded++
			add(PartToolSuccess, w.ToolSuccess)
			if ResultUsed(result.Content, later) {
				out.Used++
				add(PartToolUse, w.ToolUse)
			}
		default:
			out.Failed++
			add(PartToolFailure, w.ToolFailure)
		}
		if step < 0 {
			pending += r
			return
		}
		out.Steps[step] += r
	}
	for i := range segs {
		if segs[i].Kind == traj.SegmentModel && (i == 0 || segs[i-1].Turn != segs[i].Turn || segs[i-1].Kind == traj.SegmentTool) {
			out.Steps = append(out.Steps, 0)
		}
	}
	scoreRef := func(ref traj.CallRef) {
		var call *traj.ToolCall
		var result *traj.ToolResult
		var later []traj.Segment
		if ref.Model >= 0 {
			call = segs[ref.Model].Call
		} else if call = segs[ref.Tool].Call; call == nil {
			call = &traj.ToolCall{}
		}
		if ref.Tool >= 0 {
			result = segs[ref.Tool].Result
			// The model text after the turn's tool turn: past its tool segments.
			k := ref.Tool + 1
			for k < len(segs) && segs[k].Kind == traj.SegmentTool {
				k++
			}
			later = segs[k:]
		}
		step = ref.Step
		score(call, result, later)
	}
	var refsArr [8]traj.CallRef
	refs := traj.PairCalls(refsArr[:0], segs)
	// Calls before any model segment come first; their parts seed step 0.
	for len(refs) > 0 && refs[0].Step < 0 {
		scoreRef(refs[0])
		refs = refs[1:]
	}
	if len(out.Steps) > 0 {
		out.Steps[0] = pending
	}
	for _, ref := range refs {
		scoreRef(ref)
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
