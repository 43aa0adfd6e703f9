package orchestrator

import (
	"fmt"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/tools"
)

// Hooks change parts of a run that a job file cannot, for benchmarks that
// must measure the rollout's own loop on a synthetic workload (toolrl bench
// actor) and for tests. The zero value changes nothing. Everything else —
// admission, batching, tool execution, injection, scoring, the sink — is the
// run's as usual.
type Hooks struct {
	// Format replaces the prompt format the job's model folder gives: the
	// prompt tokens and the tokens injected after each call.
	Format Format
	// Tools replaces the tools the job names (or the model folder ships).
	// The run owns it from then on and closes it when it ends, as it closes
	// its own.
	Tools *tools.Registry
	// Pauses replaces call parsing: samples pause at simulated calls on its
	// schedule instead of at the calls their text makes.
	Pauses *PauseSchedule
	// Sampling edits the decoding settings the runner derives from the job,
	// before they are validated (a benchmark ignores EOS ids and caps the
	// tokens sampled over the whole trajectory).
	Sampling func(*actor.Sampling)
	// Engine is called with the run's engine once it is made, so that a
	// benchmark can read its Stats from the feed's and the sink's calls (they
	// run on the runner's goroutine, as the engine requires). It is not
	// called again for the engine a hot reload makes.
	Engine func(*actor.Engine)
	// Forced, when set, gives the token ids sample i of every group
	// samples, in order, instead of drawing them (actor.GroupRequest.Forced:
	// a forced-token sampler for tests; logprobs stay the model's own).
	Forced func(sample int) []int32
}

// PauseSchedule simulates tool calls at fixed points: sample i of a group
// completes Call after every Interval(i) sampled tokens, counting every
// sampled token (the first, sampled by the prefill, included) whatever its
// text, and the runner executes it with the run's tools and injects the
// result like a call the policy wrote. A call completed by a sample's last
// token is executed and injected too, and ends the trajectory.
type PauseSchedule struct {
	// Interval returns sample i's interval in sampled tokens; it must be
	// positive. toolrl bench actor uses every + i%4, so that the samples of
	// a group do not pause in lockstep.
	Interval func(sample int) int
	// Call is the call each pause makes (Name and Arguments; Raw is what the
	// trajectory records as the call's text).
	Call tools.Call
}

// newDetectors returns the actor.GroupRequest.NewDetector of one group: a
// parser of the format's call syntax for every sample, or under a pause
// schedule the schedule's detector of each sample (AddGroup calls it once
// per sample, in sample order).
func (r *runner) newDetectors() (func() actor.CallDetector, error) {
	ps := r.opts.Hooks.Pauses
	if ps == nil {
		return func() actor.CallDetector { return newCallDetector(r.newParser(), r.format.TurnCalls()) }, nil
	}
	intervals := make([]int, r.job.GroupSize.Get())
	for i := range intervals {
		if intervals[i] = ps.Interval(i); intervals[i] <= 0 {
			return nil, fmt.Errorf("pause schedule: sample %d: interval %d, want > 0", i, intervals[i])
		}
	}
	next := 0
	return func() actor.CallDetector {
		d := newScheduledDetector(intervals[next%len(intervals)], ps.Call)
		next++
		return d
	}, nil
}
