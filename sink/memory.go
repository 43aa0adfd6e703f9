package sink

import (
	"context"

	"github.com/toolrl/toolrl/traj"
)

// MemorySink is a Sink that keeps the groups a run writes, in the order they
// are written, for callers that use them in the same process (the closed
// loop's rollout and evaluation, toolrl model eval). It holds nothing from
// before the run (Resume finds nothing) and never refuses a group. Like every
// sink it is used by the run's one goroutine; read Groups after orchestrator.Run returns.
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
