package trainer

import (
	"math"
	"strings"

	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/traj"
)

// RolloutStats are a set of trajectories' figures (one iteration's rollout,
// or one evaluation and each of its splits). Rates are over trajectories
// unless said otherwise.
type RolloutStats struct {
	Groups       int `json:"groups"`
	Trajectories int `json:"trajectories"`
	// RewardMean is the mean total reward; Accuracy the share of
	// trajectories whose final answer is right.
	RewardMean float64 `json:"reward_mean"`
	Accuracy   float64 `json:"accuracy"`
	// CallRate is the share of trajectories with at least one tool call;
	// CallsPerTrajectory the mean number of calls.
	CallRate           float64 `json:"call_rate"`
	CallsPerTrajectory float64 `json:"calls_per_trajectory"`
	// InvalidCallRate and TimeoutRate are over calls: calls that did not
	// parse or validate, or that the tool rejected (invalid_args), and calls
	// that timed out.
	InvalidCallRate float64 `json:"invalid_call_rate"`
	TimeoutRate     float64 `json:"timeout_rate"`
	// ResponseTokens is the mean response length (sampled + injected).
	ResponseTokens float64 `json:"response_tokens_mean"`
	// GroupsWithSignal is the share of groups whose rewards are not all equal.
	GroupsWithSignal float64 `json:"groups_with_signal"`
	Seconds          float64 `json:"seconds"`
	// PerPrompt are the counts behind the rates, prompt by prompt: what an
	// interval over prompts needs (the G samples of one prompt are
	// correlated). An evaluation fills it, overall and for each split
	// value; a rollout's figures (metrics.jsonl) and eval.jsonl lines
	// written before it existed have none.
	PerPrompt *PromptCounts `json:"per_prompt,omitempty"`
}

// PromptCounts are a set of groups' counts per prompt, as columns: entry j
// of every slice is the j-th prompt's, in the order of the evaluation's
// prompts (a split holds its own prompts, in that order). All slices have
// one entry per group; Correct and WithCall are at most Samples.
type PromptCounts struct {
	// Samples are the prompt's trajectories (the group size G); Correct
	// those whose final answer is right; WithCall those with at least one
	// tool call; Calls the tool calls of all of them (every outcome).
	Samples  []int `json:"samples"`
	Correct  []int `json:"correct"`
	WithCall []int `json:"with_call"`
	Calls    []int `json:"calls"`
}

// invalidCallClasses are the call outcomes that count as invalid calls: the
// parse errors of traj.ToolCall.ParseError and the tool's argument refusal.
var invalidCallClasses = map[string]bool{
	"unterminated": true, "bad_json": true, "unknown_tool": true, "schema": true, "too_long": true,
	"invalid_args": true,
}

// statsOf turns an orchestrator summary into RolloutStats.
func statsOf(s *orchestrator.Summary) RolloutStats {
	st := RolloutStats{Groups: s.GroupsWritten, Trajectories: s.Trajectories, Seconds: s.Wall.Seconds()}
	if s.Trajectories == 0 {
		return st
	}
	n := float64(s.Trajectories)
	st.RewardMean = s.RewardSum / n
	st.Accuracy = float64(s.Correct) / n
	st.CallRate = float64(s.TrajectoriesWithCall) / n
	calls, invalid := 0, 0
	for class, c := range s.Calls {
		calls += c
		if invalidCallClasses[strings.TrimSpace(class)] {
			invalid += c
		}
	}
	st.CallsPerTrajectory = float64(calls) / n
	if calls > 0 {
		st.InvalidCallRate = float64(invalid) / float64(calls)
		st.TimeoutRate = float64(s.Calls["timeout"]) / float64(calls)
	}
	st.ResponseTokens = float64(s.SampledTokens+s.InjectedTokens) / n
	if s.GroupsWritten > 0 {
		st.GroupsWithSignal = float64(s.GroupsWithSignal) / float64(s.GroupsWritten)
	}
	return st
}

// AdvantageStats are one iteration's advantage figures.
type AdvantageStats struct {
	Groups       int     `json:"groups"`
	Records      int     `json:"records"`
	ZeroVariance int     `json:"zero_variance_groups"`
	Dropped      int     `json:"dropped_groups"`
	AdvAbsMean   float64 `json:"adv_abs_mean"`
	// MixedGroups are the groups that hold both right and wrong answers
	// (by the job's answer check) and have records; RightNegative counts
	// their right trajectories whose advantage at the first trained token
	// (the decision every sample takes from the same state, the prompt) is
	// below zero, RightNotAboveWrong their (right, wrong) pairs where the
	// right one's is at or below the wrong one's. A credit that keeps a
	// right answer above a wrong one keeps both at 0 (issue #26).
	MixedGroups        int     `json:"mixed_groups"`
	RightNegative      int     `json:"right_negative"`
	RightNotAboveWrong int     `json:"right_not_above_wrong"`
	Seconds            float64 `json:"seconds"`
}

// PhaseSeconds is where an iteration's time went.
type PhaseSeconds struct {
	Rollout   float64 `json:"rollout"`
	Advantage float64 `json:"advantage"`
	Learn     float64 `json:"learn"`
	Publish   float64 `json:"publish"`
	Eval      float64 `json:"eval"`
	Total     float64 `json:"total"`
}

// IterationMetrics is one line of metrics.jsonl.
type IterationMetrics struct {
	Iteration int `json:"iteration"`
	// RolloutVersion is the policy version that sampled this iteration's
	// groups; PublishedVersion the version this iteration's update published.
	RolloutVersion   int64           `json:"rollout_version"`
	PublishedVersion int64           `json:"published_version"`
	Rollout          RolloutStats    `json:"rollout"`
	Advantage        AdvantageStats  `json:"advantage"`
	Learner          learner.Metrics `json:"learner"`
	Seconds          PhaseSeconds    `json:"seconds"`
}

// EvalMetrics is one line of eval.jsonl: a version's figures on the
// held-out prompts, overall and split by each configured meta field.
type EvalMetrics struct {
	// Iteration is the iteration after which the version was evaluated (0:
	// before the first update).
	Iteration     int          `json:"iteration"`
	PolicyVersion int64        `json:"policy_version"`
	Prompts       int          `json:"prompts"`
	Overall       RolloutStats `json:"overall"`
	// Split maps a meta field to its values' figures, e.g.
	// split["difficulty"]["easy"].
	Split map[string]map[string]RolloutStats `json:"split,omitempty"`
}

// groupStats folds groups into RolloutStats with the orchestrator's
// accounting and the job's own answer check (the job must be normalized),
// with the groups' counts per prompt in the order given.
func groupStats(groups []traj.Group, job *orchestrator.Job) RolloutStats {
	sum := orchestrator.NewSummary(job.ID.Get())
	for i := range groups {
		sum.AddGroup(&groups[i], correctness(&groups[i], job))
	}
	st := statsOf(sum)
	st.PerPrompt = promptCounts(groups, job)
	return st
}

// correctness is whether each of g's trajectories is right by the job's
// answer check.
func correctness(g *traj.Group, job *orchestrator.Job) []bool {
	correct := make([]bool, len(g.Trajectories))
	for j := range g.Trajectories {
		t := g.Trajectories[j] // Score sets the reward; score a copy
		correct[j] = job.Rewards.Score(&t, t.Answer)
	}
	return correct
}

// correctnessOf is correctness of each group.
func correctnessOf(groups []traj.Group, job *orchestrator.Job) [][]bool {
	out := make([][]bool, len(groups))
	for i := range groups {
		out[i] = correctness(&groups[i], job)
	}
	return out
}

// promptCounts counts each group's samples, right answers, samples with a
// call and calls, one entry per group in the order given, with the
// orchestrator's accounting (one Summary per group, so that the counts sum
// to the figures statsOf reports) and the job's answer check.
func promptCounts(groups []traj.Group, job *orchestrator.Job) *PromptCounts {
	pc := &PromptCounts{
		Samples: make([]int, len(groups)), Correct: make([]int, len(groups)),
		WithCall: make([]int, len(groups)), Calls: make([]int, len(groups)),
	}
	for i := range groups {
		sum := orchestrator.NewSummary(job.ID.Get())
		sum.AddGroup(&groups[i], correctness(&groups[i], job))
		calls := 0
		for _, c := range sum.Calls {
			calls += c
		}
		pc.Samples[i], pc.Correct[i], pc.WithCall[i], pc.Calls[i] = sum.Trajectories, sum.Correct, sum.TrajectoriesWithCall, calls
	}
	return pc
}

// advantageStats counts records, zero-variance groups, the mean |A| over
// trained tokens and, with correct[g][i] whether sample i of groups[g] is
// right, the right answers the credit put below zero or below a wrong one.
func advantageStats(records []traj.AdvantageRecord, groups []traj.Group, correct [][]bool) AdvantageStats {
	st := AdvantageStats{Groups: len(groups), Records: len(records)}
	countInversions(&st, records, groups, correct)
	zero := map[string]bool{}
	var sum float64
	var n int
	for _, rec := range records {
		if rec.ZeroVariance {
			zero[rec.GroupID] = true
		}
		for j, a := range rec.Advantages {
			if rec.LossMask[j] != 0 {
				sum += math.Abs(float64(a))
				n++
			}
		}
	}
	st.ZeroVariance = len(zero)
	if n > 0 {
		st.AdvAbsMean = sum / float64(n)
	}
	return st
}

// countInversions fills st's MixedGroups, RightNegative and
// RightNotAboveWrong from each record's advantage at its first trained
// token; a group none of whose records was kept (zero variance dropped)
// is not counted.
func countInversions(st *AdvantageStats, records []traj.AdvantageRecord, groups []traj.Group, correct [][]bool) {
	type sample struct{ group, index int }
	first := map[sample]float64{}
	groupOf := make(map[string]int, len(groups))
	for g := range groups {
		groupOf[groups[g].GroupID] = g
	}
	for _, rec := range records {
		g, ok := groupOf[rec.GroupID]
		if !ok {
			continue
		}
		for j, a := range rec.Advantages {
			if j < len(rec.LossMask) && rec.LossMask[j] != 0 {
				first[sample{g, rec.SampleIndex}] = float64(a)
				break
			}
		}
	}
	for g := range groups {
		var right, wrong []float64
		for i, ok := range correct[g] {
			// correct is by position; records name their sample index.
			a, has := first[sample{g, groups[g].Trajectories[i].SampleIndex}]
			if !has {
				continue
			}
			if ok {
				right = append(right, a)
			} else {
				wrong = append(wrong, a)
			}
		}
		if len(right) == 0 || len(wrong) == 0 {
			continue
		}
		st.MixedGroups++
		for _, r := range right {
			if r < 0 {
				st.RightNegative++
			}
			for _, w := range wrong {
				if r <= w {
					st.RightNotAboveWrong++
				}
			}
		}
	}
}
