package trajtest

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/toolrl/toolrl/traj"
)

// Shape bounds what Random draws. Ranges are inclusive; a zero range takes
// the default named.
type Shape struct {
	// Steps is the number of model turns of a sample; default {1, 4}.
	Steps [2]int
	// Model is the length of a model segment; default {1, 5}.
	Model [2]int
	// Tool is the length of a tool segment (one between each two turns);
	// default {1, 3}.
	Tool [2]int
	// Prompt, when set, draws the length of the prompt the group shares,
	// instead of Options.PromptTokens.
	Prompt [2]int
	// Vocab > 0 draws every token id from [0, Vocab); 0 keeps the fixed ids
	// Group writes (response tokens only: the prompt is Options.PromptTokens
	// or, with Prompt, 1, 2, ...).
	Vocab int
	// Corners also draws what a codec must carry through: per sample a policy
	// version, seed and finish reason; now and then an empty response (empty
	// lists, not nil); model text with non-ASCII; a -0 logprob; calls on
	// every turn followed by a tool, some unparsed, some failing or timed out
	// and truncated; reference logprobs on half the samples only; reward parts
	// (the total is their sum); step rewards on two thirds; an answer and
	// meta on half.
	Corners bool
}

func (s Shape) withDefaults() Shape {
	if s.Steps == [2]int{} {
		s.Steps = [2]int{1, 4}
	}
	if s.Model == [2]int{} {
		s.Model = [2]int{1, 5}
	}
	if s.Tool == [2]int{} {
		s.Tool = [2]int{1, 3}
	}
	return s
}

// Random returns a valid group with o's identity whose samples are drawn
// from rng within s: steps of random lengths and step rewards, a reward total
// (normal, σ 2, unless o.Rewards sets it), behaviour and reference
// logprobs on sampled tokens. o.Steps is ignored; o.Sample runs last. The
// same rng state gives the same group.
func Random(rng *rand.Rand, o Options, s Shape) *traj.Group {
	o, s = o.withDefaults(), s.withDefaults()
	between := func(r [2]int) int { return r[0] + rng.IntN(r[1]-r[0]+1) }
	if s.Prompt != [2]int{} {
		o.PromptTokens = make([]int32, between(s.Prompt))
		for j := range o.PromptTokens {
			o.PromptTokens[j] = int32(j + 1)
			if s.Vocab > 0 {
				o.PromptTokens[j] = rng.Int32N(int32(s.Vocab))
			}
		}
	}
	trs := make([]traj.Trajectory, o.Size)
	for i := range trs {
		n := between(s.Steps)
		if s.Corners && rng.IntN(20) == 0 {
			n = 0
		}
		steps := make([]Step, n)
		for k := range steps {
			steps[k] = Step{Model: between(s.Model), Reward: rng.NormFloat64()}
			if k < n-1 {
				steps[k].Tool = between(s.Tool)
			}
		}
		total := rng.NormFloat64() * 2
		if s.Corners {
			cornerCalls(rng, steps)
		}
		t := build(o, i, steps)
		if o.Rewards == nil {
			t.Reward.Total = total
		}
		t.RefLogprobs = make([]float32, len(t.LossMask))
		for j, m := range t.LossMask {
			if m == 1 {
				t.Logprobs[j] = -float32(rng.ExpFloat64())
				t.RefLogprobs[j] = -float32(rng.ExpFloat64())
			}
		}
		if s.Vocab > 0 {
			for j := t.PromptLen; j < len(t.Tokens); j++ {
				t.Tokens[j] = rng.Int32N(int32(s.Vocab))
			}
		}
		if s.Corners {
			corners(rng, &t, o.Rewards == nil)
		}
		if o.Sample != nil {
			o.Sample(i, &t)
		}
		trs[i] = t
	}
	return group(trs)
}

// cornerCalls gives every turn that a tool answers a call, now and then an
// unparsed one, and the result such a call gets.
func cornerCalls(rng *rand.Rand, steps []Step) {
	for k := range steps {
		steps[k].Text = fmt.Sprintf("turn %d → ü %q", k, "x")
		if steps[k].Tool == 0 {
			continue
		}
		steps[k].Call = &traj.ToolCall{Name: "calculator", Raw: "[CALC: 2 * 3]", Arguments: json.RawMessage(`{"expression": "2 * 3"}`)}
		steps[k].Result = &traj.ToolResult{OK: true, Content: "6", LatencyMS: rng.Float64() * 3}
		switch {
		case rng.IntN(5) == 0:
			steps[k].Call = &traj.ToolCall{Name: "calculator", Raw: "[CALC: 2 *", ParseError: "unterminated: no closing ]"}
			steps[k].Result = &traj.ToolResult{ErrorClass: "invalid_args", Error: "unterminated call", Content: "error: unterminated"}
		case rng.IntN(4) == 0:
			steps[k].Result = &traj.ToolResult{ErrorClass: "timeout", Error: "deadline exceeded after 2s", Content: "error: timeout", Truncated: true}
		}
	}
}

// corners draws the rest of Shape.Corners on t.
func corners(rng *rand.Rand, t *traj.Trajectory, drawReward bool) {
	t.PolicyVersion, t.Seed = rng.Int64N(100), rng.Uint64()
	t.FinishReason = []traj.FinishReason{traj.FinishStop, traj.FinishLength, traj.FinishMaxTurns}[rng.IntN(3)]
	if len(t.LossMask) == 0 {
		t.LossMask, t.Logprobs, t.RefLogprobs, t.Segments = traj.Mask{}, []float32{}, []float32{}, []traj.Segment{}
	}
	for j, m := range t.LossMask {
		if m == 1 && rng.IntN(50) == 0 {
			t.Logprobs[j] = float32(math.Copysign(0, -1)) // -0 is a valid logprob
		}
	}
	if rng.IntN(2) == 0 {
		t.RefLogprobs = nil
	}
	for k := range t.Segments {
		if t.Segments[k].Kind == traj.SegmentTool {
			t.Segments[k].Text = " = 6"
		}
	}
	if drawReward {
		// The total sums the parts in a fixed order, so that a seed gives
		// the same bits.
		parts := map[string]float64{}
		t.Reward = traj.Reward{}
		for _, name := range []string{"outcome", "format", "tool_success", "call_cost"} {
			if rng.IntN(3) > 0 {
				parts[name] = math.Round(rng.NormFloat64()*100) / 100
				t.Reward.Total += parts[name]
			}
		}
		if len(parts) > 0 {
			t.Reward.Parts = parts
		}
	}
	if rng.IntN(3) == 0 {
		t.StepRewards = nil
	}
	if rng.IntN(2) == 0 {
		t.Answer = fmt.Sprint(rng.IntN(1000))
		t.Meta = json.RawMessage(`{"source": "calcdata", "level": 2}`)
	}
}
