package traj

import "strconv"

// NewGroup builds a group from its trajectories, taking the group's identity
// from the first one. It does not validate.
func NewGroup(trajectories []Trajectory) Group {
	g := Group{Schema: TrajectorySchema, Trajectories: trajectories}
	if len(trajectories) > 0 {
		first := trajectories[0]
		g.GroupID, g.JobID, g.PromptID, g.Iteration, g.PolicyVersion = first.GroupID, first.JobID, first.PromptID, first.Iteration, first.PolicyVersion
	}
	return g
}

// TrajectoryID is the deterministic trajectory id: GroupID(job, promptID,
// iteration) + "/" + sampleIndex, e.g. "job/p7/3" in iteration 0 and
// "job/p7@2/3" in iteration 2.
func TrajectoryID(job, promptID string, iteration, sampleIndex int) string {
	return GroupID(job, promptID, iteration) + "/" + strconv.Itoa(sampleIndex)
}

// GroupID is the deterministic id of the group of promptID sampled in
// iteration of job: "job/prompt" in iteration 0 (a plain rollout, and every
// id written before iterations existed), "job/prompt@k" in iteration k > 0.
// It is what idempotency keys on (sinks, resume, the Redis written and done
// sets), so each (job, prompt, iteration) is one group, written once. A
// prompt id containing '@' could make two of these equal; the orchestrator
// refuses such ids.
func GroupID(job, promptID string, iteration int) string {
	if iteration == 0 {
		return job + "/" + promptID
	}
	return job + "/" + promptID + "@" + strconv.Itoa(iteration)
}
