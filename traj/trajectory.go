package traj

import (
	"encoding/json"
	"fmt"
)

// SegmentKind says who produced a span of the response.
type SegmentKind string

const (
	// SegmentModel is a span sampled by the policy (loss mask 1).
	SegmentModel SegmentKind = "model"
	// SegmentTool is a span injected by the environment (loss mask 0): a tool
	// result and the separators around it.
	SegmentTool SegmentKind = "tool"
)

// FinishReason says why a trajectory ended.
type FinishReason string

// The finish reasons of DESIGN.md.
const (
	FinishStop         FinishReason = "stop"
	FinishLength       FinishReason = "length"
	FinishMaxTurns     FinishReason = "max_turns"
	FinishMaxToolCalls FinishReason = "max_tool_calls"
	FinishError        FinishReason = "error"
)

// Valid reports whether r is one of the known finish reasons.
func (r FinishReason) Valid() bool {
	switch r {
	case FinishStop, FinishLength, FinishMaxTurns, FinishMaxToolCalls, FinishError:
		return true
	}
	return false
}

// ModelRef names the policy that produced a trajectory.
type ModelRef struct {
	// Name is the policy folder's base name (vNNNNNN/quantized for a
	// policy version's quantized form).
	Name string `json:"name"`
	// Hash is a content hash of the model file (e.g. "sha256:..."), so that two
	// trajectories can be compared for having come from the same weights.
	Hash string `json:"hash,omitempty"`
	// Quantization names the weights' quantization when the actor sampled
	// with a quantized copy of the policy (e.g. "int8-b32-acc4", see
	// model/llama.Quantization); empty for full precision. The recorded
	// logprobs are then the quantized policy's (the behaviour policy).
	Quantization string `json:"quantization,omitempty"`
}

// ToolCall is a call the model wrote, as parsed.
type ToolCall struct {
	// Name is the tool's name as the model wrote it.
	Name string `json:"name"`
	// Arguments is the JSON object of arguments (for the bracket form, the
	// parser's normalised object, e.g. {"expression":"12 * 34"}).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Raw is the exact text the model wrote, markup included.
	Raw string `json:"raw"`
	// ParseError is empty when the call parsed and validated; otherwise it holds
	// the error class (unterminated, bad_json, unknown_tool, schema, too_long,
	// over_cap) followed by ": " and the detail.
	ParseError string `json:"parse_error,omitempty"`
}

// Equal reports whether c and d are the same call: both nil, or equal
// names, raw text, parse errors and argument bytes.
func (c *ToolCall) Equal(d *ToolCall) bool {
	if c == nil || d == nil {
		return c == d
	}
	return c.Name == d.Name && c.Raw == d.Raw && c.ParseError == d.ParseError && string(c.Arguments) == string(d.Arguments)
}

// describe names c for an error message.
func (c *ToolCall) describe() string {
	if c == nil {
		return "no call"
	}
	return fmt.Sprintf("call %q (raw %q)", c.Name, c.Raw)
}

// ToolResult is what executing a call gave.
type ToolResult struct {
	// OK is true when the tool ran and returned a result.
	OK bool `json:"ok"`
	// ErrorClass is empty when OK; otherwise timeout, panic, tool_error,
	// invalid_args, canceled, ...
	ErrorClass string `json:"error_class,omitempty"`
	// Error is the error's detail, when the tool failed.
	Error string `json:"error,omitempty"`
	// Content is the normalised text injected into the sequence.
	Content string `json:"content"`
	// LatencyMS is the wall time of the execution in milliseconds.
	LatencyMS float64 `json:"latency_ms,omitempty"`
	// Truncated is true when Content was cut to the tool's output limit.
	Truncated bool `json:"truncated,omitempty"`
	// Fault is the failure the environment injected into the call (a
	// tools registry entry's faults: block), when it had an effect: error
	// (ErrorClass tool_error), timeout or latency (ErrorClass timeout: the
	// drawn latency reached the call's timeout), implicit (OK, but Content
	// is a plausible wrong result). Empty, and omitted, when none.
	Fault string `json:"fault,omitempty"`
}

// Segment is a contiguous span of the response. Start and End are offsets into
// the response (Tokens[PromptLen:]), End exclusive. Segments are ordered, do not
// overlap and together cover the whole response.
//
// Segments come in turns (Validate checks the layout): an assistant turn that
// made N ≥ 1 tool calls is N model segments with the same Turn, model segment
// i ending right after the token that closed call i and the last running to
// the turn's end token, each holding its call; then N tool segments with that
// Turn, tool segment i covering the part of the injected tool turn that
// answers call i. A turn without calls is one model segment. The next turn's
// segments have Turn + 1. Only the last turn may leave calls unanswered (the
// trajectory ended at a cap). With one call per turn this is model, tool,
// model, tool, ..., as toolrl wrote before parallel calls.
type Segment struct {
	// Kind is model (sampled by the policy, mask 1) or tool (injected by
	// the environment, mask 0).
	Kind SegmentKind `json:"kind"`
	// Turn counts assistant turns from 0; every model segment of a turn and
	// the tool segments answering its calls carry it.
	Turn int `json:"turn"`
	// Start is the segment's first response token (an offset into the
	// response, not into the whole sequence).
	Start int `json:"start"`
	// End is one past the segment's last response token.
	End int `json:"end"`
	// Text is the segment's decoded text, when the producer kept it.
	Text string `json:"text,omitempty"`
	// Call is set on a model segment that ended in a tool call (parsed or
	// not), and repeated on the tool segment that answers it (which other
	// producers may leave unset).
	Call *ToolCall `json:"call,omitempty"`
	// Result is set on tool segments.
	Result *ToolResult `json:"result,omitempty"`
}

// Len is the number of tokens in the segment.
func (s Segment) Len() int { return s.End - s.Start }

// Reward is a trajectory's total reward and the named parts it is the sum of
// (outcome, format, tool_success, tool_use, call_cost, invalid_call, over_cap, ...),
// each already multiplied by its weight. Trajectory and AdvantageRecord embed
// it, so its fields are theirs in JSON (schema v3): "reward", a number, and
// "reward_parts", an object; v1 and v2 wrote one object
// "reward": {"total": ..., "parts": {...}}.
type Reward struct {
	// Total is the trajectory's reward, the sum of Parts (and of the step
	// rewards when there are any).
	Total float64 `json:"reward"`
	// Parts are the named terms of Total, each already weighted (outcome,
	// format, tool_success, tool_use, call_cost, invalid_call, over_cap, ...).
	Parts map[string]float64 `json:"reward_parts,omitempty"`
}

// Trajectory is one sampled response to one prompt, with everything a trainer
// needs to compute a loss on it.
type Trajectory struct {
	// Schema is the record's schema version: TrajectorySchema when toolrl
	// writes it; v1 and v2 are read.
	Schema string `json:"schema"`
	// ID is deterministic: TrajectoryID(JobID, PromptID, Iteration,
	// SampleIndex), i.e. GroupID/SampleIndex.
	ID string `json:"id"`
	// JobID names the rollout job (the --job flag, or the config's).
	JobID string `json:"job_id"`
	// PromptID is the prompt's id in the prompts file.
	PromptID string `json:"prompt_id"`
	// Iteration is the closed loop's iteration the prompt was sampled in
	// (schema v2): a job samples the same prompt again in every iteration,
	// and each sampling is its own group. 0 for a plain rollout (and always
	// in v1 data); ≥ 0.
	Iteration int `json:"iteration,omitempty"`
	// GroupID is GroupID(JobID, PromptID, Iteration): JobID/PromptID, with
	// "@Iteration" appended when Iteration > 0. All G samples of a prompt in
	// one iteration share it.
	GroupID string `json:"group_id"`
	// GroupSize is G, the number of samples of the prompt in the group.
	GroupSize int `json:"group_size"`
	// SampleIndex is this sample's index in the group, in [0, GroupSize).
	SampleIndex int `json:"sample_index"`
	// PolicyVersion is the version of the policy that sampled the
	// trajectory (0 for the starting policy; the policy store's numbers).
	PolicyVersion int64 `json:"policy_version"`
	// Seed is the sampling seed of this sample: the same seed, prompt and
	// policy give the same trajectory.
	Seed uint64 `json:"seed"`
	// Temperature is the sampling temperature the logprobs were computed at
	// (log-softmax(logits/T)). 0 means greedy decoding, whose logprobs are
	// log-softmax(logits) (T = 1) though the tokens were not sampled from that
	// distribution, so a ratio-based learner cannot train on it. nil means
	// unknown: v1 data, which predates the field (toolrl's v2 writers always
	// set it). A pointer because 0 is meaningful. Finite and ≥ 0 when set.
	Temperature *float64 `json:"temperature,omitempty"`
	// Model names the policy that sampled the trajectory.
	Model ModelRef `json:"model"`

	// Tokens is the whole sequence as the model consumed it: prompt and
	// response (v1/v2: "tokens").
	Tokens []int32 `json:"input_ids"`
	// PromptLen is how many of the first Tokens are the prompt (chat
	// template included); the response is the rest.
	PromptLen int `json:"prompt_len"`
	// LossMask has one entry per response token: 1 = sampled by the policy,
	// 0 = injected by the environment (v1/v2: "loss_mask").
	LossMask Mask `json:"response_mask"`
	// Logprobs has one entry per response token: the behaviour policy's
	// log-softmax(logits/temperature) of the sampled token over the full
	// vocabulary, before top-k/top-p truncation; 0 where LossMask is 0
	// (v1/v2: "logprobs").
	Logprobs []float32 `json:"rollout_log_probs"`
	// RefLogprobs is optional: the reference policy's teacher-forced logprobs
	// (temperature 1), one per response token, 0 where LossMask is 0
	// (v1/v2: "ref_logprobs").
	RefLogprobs []float32 `json:"ref_log_prob,omitempty"`

	// Segments cover the response in order: the model's turns and the
	// tool results injected between them (see Segment).
	Segments []Segment `json:"segments"`
	// FinishReason says why the trajectory ended: stop, length, max_turns,
	// max_tool_calls or error.
	FinishReason FinishReason `json:"finish_reason"`
	// Reward is the total reward and its parts (JSON "reward" and
	// "reward_parts", see Reward).
	Reward
	// StepRewards has one entry per step (an assistant turn: see Steps), in
	// order. With one call per turn that is one per model segment.
	StepRewards []float64 `json:"step_rewards,omitempty"`

	// Answer is the reference answer of the prompt, when it has one.
	Answer string `json:"answer,omitempty"`
	// Meta is the prompt's free-form metadata, passed through.
	Meta json.RawMessage `json:"meta,omitempty"`
}

// ResponseLen is the number of response tokens.
func (t *Trajectory) ResponseLen() int { return len(t.Tokens) - t.PromptLen }

// Response returns the response tokens (a sub-slice, not a copy).
func (t *Trajectory) Response() []int32 { return t.Tokens[t.PromptLen:] }

// ModelSegments counts the segments of kind model.
func (t *Trajectory) ModelSegments() int {
	n := 0
	for _, s := range t.Segments {
		if s.Kind == SegmentModel {
			n++
		}
	}
	return n
}

// Steps counts the trajectory's steps, the unit of per-step credit: its
// assistant turns, i.e. the model segments that begin a turn (a turn with N
// calls has N model segments, see Segment). It equals ModelSegments when no
// turn made more than one call.
func (t *Trajectory) Steps() int {
	n := 0
	for i, s := range t.Segments {
		if s.Kind == SegmentModel && (i == 0 || t.Segments[i-1].Turn != s.Turn) {
			n++
		}
	}
	return n
}

// StepOf returns, for each segment, the index of the step (turn) it belongs
// to among t.Steps(): the count of turns begun before or at it, minus one.
// It appends to dst (reused when it has room) and returns it.
func (t *Trajectory) StepOf(dst []int) []int {
	dst = dst[:0]
	step := -1
	for i, s := range t.Segments {
		if s.Kind == SegmentModel && (i == 0 || t.Segments[i-1].Turn != s.Turn) {
			step++
		}
		dst = append(dst, max(step, 0))
	}
	return dst
}

// CallRef locates one call of a trajectory: Model is the index in Segments
// of the model segment that wrote it, Tool that of the tool segment that
// answers it (-1: unanswered, the trajectory ended first), Step the step
// (turn, counted as Steps counts them; -1 before any model segment).
// Model is -1 for a tool segment with a result in a turn whose model
// segment recorded no call (data written so before parallel calls): the
// call is then the tool segment's Call, which may be nil.
type CallRef struct {
	Step, Model, Tool int
}

// PairCalls returns the calls of segs in order (turn by turn, and within a
// turn in call order), each paired with the tool segment that answers it:
// a turn's i-th tool segment answers the call of its i-th model segment
// that holds one (see Segment). It appends to dst and returns it.
func PairCalls(dst []CallRef, segs []Segment) []CallRef {
	step := -1
	first := len(dst) // the current turn's first call in dst
	answered := 0     // how many of the current turn's calls a tool segment answered
	for i := range segs {
		s := &segs[i]
		if s.Kind == SegmentModel {
			if i == 0 || segs[i-1].Turn != s.Turn || segs[i-1].Kind == SegmentTool {
				step++
				first, answered = len(dst), 0
			}
			if s.Call != nil {
				dst = append(dst, CallRef{Step: step, Model: i, Tool: -1})
			}
			continue
		}
		if s.Kind != SegmentTool {
			continue
		}
		switch {
		case first+answered < len(dst):
			dst[first+answered].Tool = i
			answered++
		case s.Result != nil:
			dst = append(dst, CallRef{Step: step, Model: -1, Tool: i})
			first, answered = len(dst), 0
		}
	}
	return dst
}

// Group is the G trajectories sampled for one prompt: the unit the advantage
// service consumes, because GRPO baselines are computed within a group.
type Group struct {
	// Schema is the group's schema version (a trajectory schema; its
	// trajectories have the same version or an older one).
	Schema string `json:"schema"`
	// GroupID is the id its trajectories share (Trajectory.GroupID).
	GroupID string `json:"group_id"`
	// JobID names the rollout job.
	JobID string `json:"job_id"`
	// PromptID is the prompt's id.
	PromptID string `json:"prompt_id"`
	// Iteration is the iteration every trajectory of the group was sampled
	// in (see Trajectory.Iteration).
	Iteration int `json:"iteration,omitempty"`
	// PolicyVersion is its first trajectory's (NewGroup); toolrl's rollout
	// samples a group with one policy version.
	PolicyVersion int64 `json:"policy_version"`
	// Trajectories are the G samples, in sample index order.
	Trajectories []Trajectory `json:"trajectories"`
}

// AdvantageRecord is one trajectory with its per-token advantages, ready for a
// trainer's policy-gradient loss. Per-token arrays are over the response.
type AdvantageRecord struct {
	// Schema is the record's schema version: AdvantageSchema when toolrl
	// writes it; v1 and v2 are read.
	Schema string `json:"schema"`
	// TrajectoryID is the id of the trajectory the record was computed
	// from (Trajectory.ID).
	TrajectoryID string `json:"trajectory_id"`
	// GroupID is the trajectory's group: the records of one group share
	// the baseline (verl's uid).
	GroupID string `json:"group_id"`
	// Iteration is the trajectory's (see Trajectory.Iteration): 0 for a
	// plain rollout and for v1 data.
	Iteration int `json:"iteration,omitempty"`
	// SampleIndex is the trajectory's index in its group.
	SampleIndex int `json:"sample_index"`
	// PolicyVersion is the version of the policy that sampled the
	// trajectory: a learner's staleness is its own version minus this.
	PolicyVersion int64 `json:"policy_version"`
	// Temperature is the trajectory's: the sampling temperature OldLogprobs
	// were computed at (0 = greedy, nil = unknown: built from v1 data); see
	// Trajectory.Temperature.
	Temperature *float64 `json:"temperature,omitempty"`

	// InputIDs is the trajectory's whole sequence, prompt and response
	// (Trajectory.Tokens).
	InputIDs []int32 `json:"input_ids"`
	// PromptLen is how many of the first InputIDs are the prompt.
	PromptLen int `json:"prompt_len"`
	// LossMask is the trajectory's (v1/v2: "loss_mask").
	LossMask Mask `json:"response_mask"`
	// OldLogprobs are the trajectory's behaviour logprobs (v1/v2:
	// "old_logprobs"); a trainer that recomputes them before its update
	// calls its own copy old_log_probs, as verl does.
	OldLogprobs []float32 `json:"rollout_log_probs"`
	// RefLogprobs are the trajectory's (v1/v2: "ref_logprobs").
	RefLogprobs []float32 `json:"ref_log_prob,omitempty"`
	// Advantages has one entry per response token; 0 where LossMask is 0.
	Advantages []float32 `json:"advantages"`
	// KL is the per-token KL estimate (k1, k2 or k3 of KLEstimator) against the
	// reference; empty when no reference logprobs were available.
	KL []float32 `json:"kl,omitempty"`
	// KLEstimator names the estimator of KL: k1, k2 or k3 (Schulman's);
	// empty when KL is.
	KLEstimator string `json:"kl_estimator,omitempty"`

	// Reward is the trajectory's (JSON "reward" and "reward_parts").
	Reward
	// StepRewards are the trajectory's, one per step (assistant turn).
	StepRewards []float64 `json:"step_rewards,omitempty"`
	// Segments are the trajectory's (for per-step credit and analysis).
	Segments []Segment `json:"segments,omitempty"`

	// Mode says how Advantages were computed: outcome (one advantage per
	// trajectory), process (per step) or hybrid.
	Mode string `json:"mode"`
	// Estimator names the baseline: grpo (group mean, divided by the
	// group's std), drgrpo (mean only) or rloo (leave-one-out mean).
	Estimator string `json:"estimator"`
	// ZeroVariance is true when every reward of the group was equal.
	ZeroVariance bool `json:"zero_variance,omitempty"`
	// Stale is true when PolicyVersion lagged the trainer's by more than the
	// allowed staleness and the record was kept, flagged.
	Stale bool `json:"stale,omitempty"`
}
