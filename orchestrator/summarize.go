package orchestrator

import "github.com/toolrl/toolrl/traj"

// NewSummary returns an empty summary for job, for callers that fold groups
// into figures themselves (a split of an evaluation by a prompt field).
func NewSummary(job string) *Summary { return newSummary(job) }

// AddGroup folds a written group into the summary exactly as a run does;
// correct[i] says whether trajectory i's final answer is right
// (reward.Config.Score).
func (s *Summary) AddGroup(g *traj.Group, correct []bool) { s.addGroup(g, correct) }
