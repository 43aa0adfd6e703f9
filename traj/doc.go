// Package traj is toolrl's data model: the trajectories that actors produce, the
// groups the advantage service consumes, and the advantage records trainers pull.
//
// Every other toolrl package imports traj; traj imports nothing of ours. The JSON
// field names are the wire format (schema toolrl.trajectory/v1 and
// toolrl.advantage/v1) and change only with a new schema version.
//
// Token layout: Tokens holds the whole sequence exactly as fed to the model
// (prompt, sampled tokens, injected tool tokens, turn separators). Everything
// "over the response" (LossMask, Logprobs, RefLogprobs, Advantages, KL) has
// len(Tokens)-PromptLen entries, and index i refers to Tokens[PromptLen+i].
package traj

// Schema versions written into every record and checked on decode.
const (
	TrajectorySchema = "toolrl.trajectory/v1"
	AdvantageSchema  = "toolrl.advantage/v1"
)
