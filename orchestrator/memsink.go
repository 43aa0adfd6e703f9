package orchestrator

import (
	"context"

	"github.com/toolrl/toolrl/traj"
)

// MemorySink is a Sink that keeps the groups a run writes, in the order they
// are written, for callers that use them in the same process (the closed
// loop's rollout and evaluation, toolrl model eval). It holds nothing from
// before the run (Resume finds nothing) and never refuses a group. Like every
// sink it is used by the run's one goroutine; read Groups after Run returns.
type MemorySink struct {
	// Groups are the groups written so far.
	Groups []traj.Group
}

// Resume implements Sink: a memory sink starts empty.
func (s *MemorySink) Resume(context.Context) (map[string]bool, error) { return nil, nil }

// WriteGroup implements Sink: it appends g (the group's slices are shared
// with the caller's, which the runner does not touch again).
func (s *MemorySink) WriteGroup(_ context.Context, g *traj.Group) (bool, error) {
	s.Groups = append(s.Groups, *g)
	return true, nil
}

// Close implements Sink; the groups stay readable.
func (s *MemorySink) Close() error { return nil }

// PromptList is a PromptFeed over a fixed list of prompts, handed out in
// order, each once; it never blocks. The runner uses one for a job's prompts
// file, and callers that already hold the prompts (an iteration's batch, the
// held-out set) pass one as RunOptions.Feed.
type PromptList struct {
	// Prompts are fed in order.
	Prompts []Prompt
	next    int
}

// Next implements PromptFeed.
func (f *PromptList) Next(context.Context, bool) (Prompt, bool, error) {
	if f.next >= len(f.Prompts) {
		return Prompt{}, false, nil
	}
	f.next++
	return f.Prompts[f.next-1], true, nil
}

// Done implements PromptFeed: a list has nothing to acknowledge.
func (f *PromptList) Done(context.Context, Prompt) error { return nil }
