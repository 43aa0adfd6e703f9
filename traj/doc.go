// Package traj is toolrl's data model: the trajectories that actors produce, the
// groups the advantage service consumes, and the advantage records trainers pull.
//
// Every other toolrl package imports traj; traj imports nothing of ours. The JSON
// field names are the wire format (schema toolrl.trajectory/v3 and
// toolrl.advantage/v3, docs/schema.md) and change only with a new schema
// version.
//
// Schema v3 renames the per-token arrays and the reward to the names a verl
// user types (schema.go's TrajectoryRenames and AdvantageRenames): tokens →
// input_ids, loss_mask → response_mask, logprobs and old_logprobs →
// rollout_log_probs, ref_logprobs → ref_log_prob, and the reward object
// {"total", "parts"} → reward (a number) beside reward_parts (an object).
// The same names hold in JSONL, Redis and Parquet. Writers write v3; v1 and
// v2 records still decode (wire reads both spellings and refuses a record
// that mixes them with its schema).
//
// Schema v2 adds two fields to v1. temperature (trajectories and advantage
// records): the sampling temperature the logprobs were computed at, which a
// learner needs to recompute them. iteration (trajectories, groups and
// advantage records): the closed loop's iteration the prompt was sampled in,
// part of a group's identity (job, prompt, iteration), omitted when 0 (a
// plain rollout), so ids are GroupID(job, prompt, iteration) = "job/prompt"
// or "job/prompt@k" and TrajectoryID = GroupID + "/sample". v1 records (which have neither field: no temperature, iteration
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
