package orchestrator

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/traj"
)

// Summary is what a finished (or interrupted) job reports.
type Summary struct {
	Job string
	// Sampling is the job's sampling settings with their sources
	// (Job.SamplingReport); empty when the run did not get that far.
	Sampling string
	// PromptsTotal counts the prompts read for this run: the prompts file's,
	// or those a feed handed out (a distributed worker's claims).
	PromptsTotal   int
	PromptsSkipped int // malformed lines skipped (--skip-invalid)
	// PromptsRefused counts prompts the run could never sample and refused
	// alone (their tokens leave no room under the model's context); the log
	// names each with the reason. A resume refuses them again.
	PromptsRefused int
	GroupsResumed  int // groups already in the output, not redone
	GroupsWritten  int
	// GroupsDuplicate counts groups another worker had already written (a
	// prompt reclaimed while still in flight), or that the feed gave twice
	// in this run; they are not written again.
	GroupsDuplicate int
	Trajectories    int
	Correct         int
	// SampledTokens counts policy tokens; InjectedTokens environment tokens.
	SampledTokens  int
	InjectedTokens int
	// Calls counts every call the policy wrote, by outcome: "ok", or the
	// error class (timeout, tool_error, bad_json, unknown_tool, over_cap, ...).
	Calls map[string]int
	// ToolCalls counts the same calls by tool, then outcome: the tool is
	// the call's name when the run's tools registry has it, else "unknown"
	// (a name the model made up, or none); the counts of an outcome over
	// all tools add up to Calls[outcome].
	ToolCalls map[string]map[string]int
	// TrajectoriesWithCall counts trajectories with at least one call.
	TrajectoriesWithCall int
	// TurnsWithCall counts assistant turns (steps) with at least one call,
	// and MaxCallsPerTurn is the most calls one turn made: with parallel
	// calls a turn makes several (traj.Segment).
	TurnsWithCall, MaxCallsPerTurn int
	// GroupsWithSignal counts groups whose rewards are not all equal.
	GroupsWithSignal int
	RewardSum        float64
	Finish           map[traj.FinishReason]int
	Wall             time.Duration
	// DecodeWall is the time spent in the actor (prefill + decode steps).
	DecodeWall  time.Duration
	Interrupted bool
	// Worker is what a distributed worker's feed did (prompt.RedisFeed.Stats),
	// nil for other runs.
	Worker *prompt.FeedStats

	// PolicyVersion is the policy version the run sampled with last: the
	// job's policy_version, or the last version a reload loaded.
	PolicyVersion int64
	// Watching is set when the run followed a policy source
	// (RunOptions.Policy).
	Watching bool
	// Reloads counts the policy versions loaded during the run (hot
	// reload); ReloadTime is their total time and ReloadMax the longest,
	// each from the start of the manifest check to the new engine (verify +
	// load + engine).
	Reloads               int
	ReloadTime, ReloadMax time.Duration
	// VersionsLoaded lists the versions the reloads loaded, in order (they
	// only increase).
	VersionsLoaded []int64
	// VersionsRefused lists the versions refused (the manifest check,
	// Verify or the load failed; the log names the file); none is retried.
	VersionsRefused []int64

	// toolNames are the registry's tools (the runner sets them); nil keeps
	// every call's own name in ToolCalls.
	toolNames map[string]bool
}

func newSummary(job string) *Summary {
	return &Summary{Job: job, Calls: map[string]int{}, ToolCalls: map[string]map[string]int{}, Finish: map[traj.FinishReason]int{}}
}

// addReload records a hot reload to version that took d.
func (s *Summary) addReload(version int64, d time.Duration) {
	s.Reloads++
	s.ReloadTime += d
	s.ReloadMax = max(s.ReloadMax, d)
	s.VersionsLoaded = append(s.VersionsLoaded, version)
	s.PolicyVersion = version
}

// addGroup folds a written group into the summary.
func (s *Summary) addGroup(g *traj.Group, correct []bool) {
	s.GroupsWritten++
	first := g.Trajectories[0].Reward.Total
	signal := false
	for i := range g.Trajectories {
		t := &g.Trajectories[i]
		s.Trajectories++
		if correct[i] {
			s.Correct++
		}
		s.RewardSum += t.Reward.Total
		if t.Reward.Total != first {
			signal = true
		}
		s.Finish[t.FinishReason]++
		for _, m := range t.LossMask {
			if m == 1 {
				s.SampledTokens++
			} else {
				s.InjectedTokens++
			}
		}
		called := false
		turnCalls, lastStep := 0, -1
		for _, ref := range traj.PairCalls(nil, t.Segments) {
			if ref.Model < 0 {
				continue // a result without a recorded call: not a call of toolrl's rollout
			}
			called = true
			if ref.Step != lastStep {
				s.TurnsWithCall++
				lastStep, turnCalls = ref.Step, 0
			}
			turnCalls++
			s.MaxCallsPerTurn = max(s.MaxCallsPerTurn, turnCalls)
			call := t.Segments[ref.Model].Call
			outcome := callOutcome(t, call, ref)
			s.Calls[outcome]++
			s.countToolCall(call.Name, outcome)
		}
		if called {
			s.TrajectoriesWithCall++
		}
	}
	if signal {
		s.GroupsWithSignal++
	}
}

// callOutcome classifies a call by its parse error or the result in the
// tool segment that answers it (traj.PairCalls: with parallel calls, the
// turn's tool segment of the same rank).
func callOutcome(t *traj.Trajectory, call *traj.ToolCall, ref traj.CallRef) string {
	if call.ParseError != "" {
		class, _, _ := strings.Cut(call.ParseError, ":")
		return strings.TrimSpace(class)
	}
	if ref.Tool >= 0 {
		if res := t.Segments[ref.Tool].Result; res != nil {
			if res.OK {
				return "ok"
			}
			return res.ErrorClass
		}
	}
	return "not_executed"
}

// Write prints the summary for a person.
func (s *Summary) Write(w io.Writer) {
	pct := func(a, b int) string {
		if b == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(b))
	}
	status := "done"
	if s.Interrupted {
		status = "interrupted (whole groups only were written)"
	}
	fmt.Fprintf(w, "job %s: %s in %s\n", s.Job, status, s.Wall.Round(time.Millisecond))
	fmt.Fprintf(w, "  prompts        %d read, %d skipped as malformed, %d groups already done (resume)\n", s.PromptsTotal, s.PromptsSkipped, s.GroupsResumed)
	fmt.Fprintf(w, "  groups         %d written (%d trajectories); %s with unequal rewards\n", s.GroupsWritten, s.Trajectories, pct(s.GroupsWithSignal, s.GroupsWritten))
	if s.PromptsRefused > 0 {
		fmt.Fprintf(w, "  refused        %d prompts longer than the model's context (the log names them)\n", s.PromptsRefused)
	}
	if s.GroupsDuplicate > 0 {
		fmt.Fprintf(w, "  duplicates     %d groups were already written by another worker (not written again)\n", s.GroupsDuplicate)
	}
	rate := 0.0
	if sec := s.DecodeWall.Seconds(); sec > 0 {
		rate = float64(s.SampledTokens) / sec
	}
	fmt.Fprintf(w, "  tokens         %d sampled, %d injected; %.0f sampled tokens/s in the actor (%.0f over the wall)\n",
		s.SampledTokens, s.InjectedTokens, rate, float64(s.SampledTokens)/max(s.Wall.Seconds(), 1e-9))
	totalCalls := 0
	for _, n := range s.Calls {
		totalCalls += n
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s.Calls)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, s.Calls[k]))
	}
	outcomes := "none"
	if len(parts) > 0 {
		outcomes = strings.Join(parts, ", ")
	}
	fmt.Fprintf(w, "  tool calls     %d (%s); call rate %s of trajectories", totalCalls, outcomes, pct(s.TrajectoriesWithCall, s.Trajectories))
	if s.MaxCallsPerTurn > 1 {
		// Parallel calls: say how they spread over turns.
		fmt.Fprintf(w, "; %d calling turns, up to %d calls per turn", s.TurnsWithCall, s.MaxCallsPerTurn)
	}
	fmt.Fprintln(w)
	var fin []string
	for _, k := range slices.Sorted(maps.Keys(s.Finish)) {
		fin = append(fin, fmt.Sprintf("%s %d", k, s.Finish[k]))
	}
	fmt.Fprintf(w, "  finish         %s\n", strings.Join(fin, ", "))
	if s.Sampling != "" {
		fmt.Fprintf(w, "  sampling       %s\n", s.Sampling)
	}
	mean := 0.0
	if s.Trajectories > 0 {
		mean = s.RewardSum / float64(s.Trajectories)
	}
	fmt.Fprintf(w, "  reward         mean %.3f; accuracy %s (%d/%d)\n", mean, pct(s.Correct, s.Trajectories), s.Correct, s.Trajectories)
	if s.Watching || s.Reloads > 0 || len(s.VersionsRefused) > 0 {
		reloads := "no reload"
		if s.Reloads > 0 {
			noun := "reloads"
			if s.Reloads == 1 {
				noun = "reload"
			}
			reloads = fmt.Sprintf("%d %s (to %s) in %.3f s, the longest %.3f s",
				s.Reloads, noun, joinVersions(s.VersionsLoaded), s.ReloadTime.Seconds(), s.ReloadMax.Seconds())
		}
		refused := ""
		if len(s.VersionsRefused) > 0 {
			refused = fmt.Sprintf("; refused %s (see the log)", joinVersions(s.VersionsRefused))
		}
		fmt.Fprintf(w, "  policy         version %d at the end; %s%s\n", s.PolicyVersion, reloads, refused)
	}
	if s.Worker != nil {
		s.Worker.Write(w)
	}
}

func joinVersions(vs []int64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}
