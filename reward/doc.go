// Package reward scores trajectories: the staged reward of tool-use RL in
// one place. ComputeToolRewards pays each call its tool parts (call_cost,
// tool_success, tool_use when ResultUsed finds the result in the model's
// later text, tool_failure, invalid_call, over_cap) on the step that made
// it; Config.Score extracts the final answer, adds outcome and format,
// clips the tool penalty of a right answer (penalty_clip) and writes the
// trajectory's reward, its parts and its step rewards, which sum to the
// total (traj.Trajectory.ValidateRewardSums checks that downstream).
//
// The rollout (orchestrator), the closed loop's evaluation (trainer) and the
// calc recipe call it; PartNames lists every part it writes, for sinks that
// fix their columns up front.
package reward
