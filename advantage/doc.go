// Package advantage is the advantage math: GRPO-family advantages and KL
// terms for a group of trajectories.
//
// Compute, Baseline and KLTerm are pure and deterministic: outcome
// advantages (GRPO, Dr.GRPO, RLOO), DeepSeekMath's per-step process
// advantages, their hybrid, Schulman's k1/k2/k3 KL estimators with verl's
// clamps, zero-variance and staleness handling. Every formula cites its
// source next to the code. Injected tokens (loss mask 0) always get 0.
// RefScorer and ReferenceLogprobs are the seam to a reference model.
//
// Two packages run the math over data: advantage/offline over files (groups
// assembled by group_id with bounded memory, spilling partial groups to
// temporary files), and advantage/serve as a service over a job's Redis
// streams (exactly-once output). Both read and write records with traj/wire.
package advantage
