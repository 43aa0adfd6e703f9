// Package traj is toolrl's data model: the trajectories that actors produce, the
// groups the advantage service consumes, and the advantage records trainers pull.
//
// Every other toolrl package imports traj; traj imports nothing of ours. The JSON
// field names are the wire format (schema toolrl.trajectory/v2 and
// toolrl.advantage/v2) and change only with a new schema version.
//
// Schema v2 adds two fields to v1. temperature (trajectories and advantage
// records): the sampling temperature the logprobs were computed at, which a
// learner needs to recompute them. iteration (trajectories, groups and
// advantage records): the closed loop's iteration the prompt was sampled in,
// part of a group's identity (job, prompt, iteration), omitted when 0 (a
// plain rollout), so ids are GroupID(job, prompt, iteration) = "job/prompt"
// or "job/prompt@k" and TrajectoryID = GroupID + "/sample". Writers always
// write v2; v1 records (which have neither field: no temperature, iteration
// 0) still decode and validate.
//
// Token layout: Tokens holds the whole sequence exactly as fed to the model
// (prompt, sampled tokens, injected tool tokens, turn separators). Everything
// "over the response" (LossMask, Logprobs, RefLogprobs, Advantages, KL) has
// len(Tokens)-PromptLen entries, and index i refers to Tokens[PromptLen+i].
//
// Segment layout: Segments cover the response in assistant turns. A turn of
// N ≥ 1 parallel tool calls is N model segments (one per call, each holding
// its call) and then N tool segments answering them in order, all with the
// same Turn; a turn without calls is one model segment (see Segment, checked
// by Validate). A step, the unit of per-step credit (StepRewards, process
// advantages), is one turn: Steps counts them, PairCalls pairs each call with
// its tool segment. With one call per turn this is the model, tool, model, …
// layout toolrl wrote before parallel calls, read unchanged.
package traj

// Schema versions written into every record and checked on decode.
// TrajectorySchema and AdvantageSchema are the current versions, the ones
// writers use; Validate accepts the current and the V1 versions.
const (
	TrajectorySchema = "toolrl.trajectory/v2"
	AdvantageSchema  = "toolrl.advantage/v2"

	// TrajectorySchemaV1 and AdvantageSchemaV1 are the first versions, without
	// temperature. They are read, never written.
	TrajectorySchemaV1 = "toolrl.trajectory/v1"
	AdvantageSchemaV1  = "toolrl.advantage/v1"
)
