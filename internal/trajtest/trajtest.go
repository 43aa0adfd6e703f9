// Package trajtest builds valid trajectories, groups and advantage records
// for tests, as net/http/httptest builds requests: one fixture for every
// package's tests instead of a builder in each. Everything it returns passes
// traj's own validation (it panics, naming the broken field, when Options
// or a Sample hook make it invalid). WriteAll and ReadAll write and read a
// whole file of records through export's writers and readers.
package trajtest

import (
	"fmt"

	"github.com/toolrl/toolrl/traj"
)

// Step is one model turn of a built trajectory: Model tokens sampled by the
// policy (loss mask 1, logprob -1, token ids 10, 11, ...), then Tool tokens
// the environment injected (loss mask 0, logprob 0, token id 99; 0 for a
// turn that ends the response), and the model segment's step reward.
type Step struct {
	Model, Tool int
	Reward      float64
	// Text is the model segment's text.
	Text string
	// Call is the call the model segment made; it is repeated on the tool
	// segment. nil: none.
	Call *traj.ToolCall
	// Result is the tool segment's result; nil means {OK: true, Content: "x"}.
	Result *traj.ToolResult
}

// DefaultSteps is the response Options without Steps gives every sample: a
// model turn of two tokens, a tool result of two, and a final one-token turn.
// Tests read it; none may modify it.
var DefaultSteps = []Step{{Model: 2, Tool: 2}, {Model: 1}}

// Options describes a group and its samples. The zero value gives a group of
// one trajectory "job/p/0" with DefaultSteps.
type Options struct {
	// Job and Prompt name the group: traj.GroupID(Job, Prompt, Iteration).
	// Defaults "job" and "p".
	Job, Prompt string
	// Iteration is the closed loop's iteration (≥ 0).
	Iteration int
	// Size is the group size; 0 means len(Rewards), or 1 without Rewards.
	Size int
	// PolicyVersion is every sample's policy version.
	PolicyVersion int64
	// Temperature is every sample's sampling temperature; nil leaves it
	// unset (unknown, as in v1 data).
	Temperature *float64
	// Model names the policy; default "test".
	Model string
	// PromptTokens is the prompt every sample shares; default {1, 2}.
	PromptTokens []int32
	// Steps is every sample's response; nil means DefaultSteps, an empty
	// non-nil slice an empty response.
	Steps []Step
	// Rewards, when set, holds the reward total of each sample (one per
	// sample); nil makes each total the sum of its step rewards, as the
	// rollout writes it.
	Rewards []float64
	// Sample, when set, edits sample i after it is built (per-sample tokens,
	// logprobs, rewards, calls). What it leaves must still be valid.
	Sample func(i int, t *traj.Trajectory)
}

// Temperature returns a pointer to v, for Options.Temperature.
func Temperature(v float64) *float64 { return &v }

func (o Options) withDefaults() Options {
	if o.Job == "" {
		o.Job = "job"
	}
	if o.Prompt == "" {
		o.Prompt = "p"
	}
	if o.Size == 0 {
		o.Size = max(1, len(o.Rewards))
	}
	if o.Model == "" {
		o.Model = "test"
	}
	if o.PromptTokens == nil {
		o.PromptTokens = []int32{1, 2}
	}
	if o.Steps == nil {
		o.Steps = DefaultSteps
	}
	return o
}

// Trajectory returns sample i of the group o describes.
func Trajectory(o Options, i int) traj.Trajectory {
	o = o.withDefaults()
	t := build(o, i, o.Steps)
	if o.Sample != nil {
		o.Sample(i, &t)
	}
	if err := t.Validate(); err != nil {
		panic(fmt.Sprintf("trajtest: invalid trajectory: %v", err))
	}
	return t
}

// Group returns the group o describes: o.Size samples, each built as
// Trajectory builds it.
func Group(o Options) *traj.Group {
	o = o.withDefaults()
	trs := make([]traj.Trajectory, o.Size)
	for i := range trs {
		trs[i] = build(o, i, o.Steps)
		if o.Sample != nil {
			o.Sample(i, &trs[i])
		}
	}
	return group(trs)
}

// build lays out sample i of o with the given steps, unvalidated.
func build(o Options, i int, steps []Step) traj.Trajectory {
	t := traj.Trajectory{
		Schema: traj.TrajectorySchema, ID: traj.TrajectoryID(o.Job, o.Prompt, o.Iteration, i), JobID: o.Job, PromptID: o.Prompt,
		Iteration: o.Iteration, GroupID: traj.GroupID(o.Job, o.Prompt, o.Iteration), GroupSize: o.Size, SampleIndex: i,
		PolicyVersion: o.PolicyVersion, Model: traj.ModelRef{Name: o.Model},
		Tokens: append([]int32(nil), o.PromptTokens...), PromptLen: len(o.PromptTokens), FinishReason: traj.FinishStop,
	}
	if o.Temperature != nil {
		temperature := *o.Temperature
		t.Temperature = &temperature
	}
	pos := 0
	for k, s := range steps {
		t.Segments = append(t.Segments, traj.Segment{Kind: traj.SegmentModel, Turn: k, Start: pos, End: pos + s.Model, Text: s.Text, Call: s.Call})
		for j := range s.Model {
			t.Tokens = append(t.Tokens, int32(10+j))
			t.LossMask = append(t.LossMask, 1)
			t.Logprobs = append(t.Logprobs, -1)
		}
		pos += s.Model
		t.StepRewards = append(t.StepRewards, s.Reward)
		t.Reward.Total += s.Reward
		if s.Tool > 0 {
			result := s.Result
			if result == nil {
				result = &traj.ToolResult{OK: true, Content: "x"}
			}
			t.Segments = append(t.Segments, traj.Segment{Kind: traj.SegmentTool, Turn: k, Start: pos, End: pos + s.Tool, Call: s.Call, Result: result})
			for range s.Tool {
				t.Tokens = append(t.Tokens, 99)
				t.LossMask = append(t.LossMask, 0)
				t.Logprobs = append(t.Logprobs, 0)
			}
			pos += s.Tool
		}
	}
	if o.Rewards != nil {
		t.Reward.Total = o.Rewards[i]
	}
	return t
}

// RolloutRewards makes t's reward total the sum of its step rewards, as the
// rollout writes it (traj.Trajectory.ValidateRewardSums); a Sample hook for
// Random, whose totals are drawn on their own.
func RolloutRewards(_ int, t *traj.Trajectory) {
	t.Reward.Total = 0
	for _, r := range t.StepRewards {
		t.Reward.Total += r
	}
}

// group makes trajectories a group and panics unless it is valid.
func group(trs []traj.Trajectory) *traj.Group {
	g := traj.NewGroup(trs)
	if err := g.Validate(); err != nil {
		panic(fmt.Sprintf("trajtest: invalid group: %v", err))
	}
	return &g
}

// AsV1 makes g what toolrl wrote before schema v2: group and trajectories
// toolrl.trajectory/v1, without temperature (and iteration 0, which v1
// data always has).
func AsV1(g *traj.Group) {
	g.Schema = traj.TrajectorySchemaV1
	for i := range g.Trajectories {
		g.Trajectories[i].Schema, g.Trajectories[i].Temperature = traj.TrajectorySchemaV1, nil
	}
}

// Record returns the advantage record of t as the advantage stage writes it
// for mode "outcome" and estimator "grpo": advantage adv on every sampled
// token, 0 on injected ones. It shares t's slices.
func Record(t traj.Trajectory, adv float32) traj.AdvantageRecord {
	r := traj.AdvantageRecord{
		Schema: traj.AdvantageSchema, TrajectoryID: t.ID, GroupID: t.GroupID, Iteration: t.Iteration, SampleIndex: t.SampleIndex,
		PolicyVersion: t.PolicyVersion, Temperature: t.Temperature, InputIDs: t.Tokens, PromptLen: t.PromptLen,
		LossMask: t.LossMask, OldLogprobs: t.Logprobs, RefLogprobs: t.RefLogprobs, Reward: t.Reward,
		StepRewards: t.StepRewards, Segments: t.Segments, Mode: "outcome", Estimator: "grpo",
	}
	if t.LossMask != nil {
		r.Advantages = make([]float32, len(t.LossMask))
		for i, m := range t.LossMask {
			if m == 1 {
				r.Advantages[i] = adv
			}
		}
	}
	if t.Schema == traj.TrajectorySchemaV1 {
		r.Schema = traj.AdvantageSchemaV1
	}
	if err := r.Validate(); err != nil {
		panic(fmt.Sprintf("trajtest: invalid advantage record: %v", err))
	}
	return r
}
