// Package advantage computes GRPO-family advantages and KL terms for groups of
// trajectories, offline over files and as a Redis stream service.
//
// The math (Compute, Baseline, KLTerm) is pure and deterministic: outcome
// advantages (GRPO, Dr.GRPO, RLOO), DeepSeekMath's per-step process
// advantages, their hybrid, Schulman's k1/k2/k3 KL estimators with verl's
// clamps, zero-variance and staleness handling. Every formula cites its
// source next to the code. Injected tokens (loss mask 0) always get 0.
//
// Offline (Offline) streams trajectories from a reader, assembles groups by
// group_id with bounded memory (spilling partial groups to temporary files)
// and writes advantage records. Service consumes the groups stream of a job
// with a consumer group and writes each group's records, marks it done and
// acknowledges it in one atomic step, so output is exactly once.
package advantage
