// Package actor runs an ONNX policy model: it loads a Hugging Face model
// folder, decodes many sequences at once with a key/value cache and
// continuous batching, samples with a per-trajectory seeded RNG, records the
// logprob of every sampled token, pauses sequences at tool calls, and scores
// given sequences teacher-forced (reference logprobs).
//
// # Engine
//
// An Engine is step-driven and has a single owner: the caller calls Step in a
// loop, and every Step runs at most one batched prefill (prompts of newly
// admitted groups and tokens injected into resumed sequences) and exactly one
// batched decode Run that advances every active sequence by one token. Work is
// admitted first in, first out, whole groups at a time, up to MaxBatch rows.
// Nothing in the engine depends on timing, map order or goroutines, so the
// batch composition at every step is a function of the calls made on the
// engine; the same calls give byte-identical trajectories.
//
// The G samples of one prompt share one prefill of the prompt; the resulting
// cache is copied G ways. A sequence that completes a tool call leaves the
// batch and keeps its cache (in place until the next re-layout of the batch,
// then in a block of its own); Inject queues the environment's tokens (loss
// mask 0, logprob 0), which are prefilled onto that cache when the sequence
// rejoins.
//
// Token in, token out: a sequence's Tokens are exactly the ids the model
// consumed (prompt, sampled tokens, injected tokens); text is only ever
// derived from ids (for call detection, stop strings and segment text), never
// re-tokenised.
//
// # Two graph layouts
//
// Load accepts optimum's text-generation-with-past layout (input_ids,
// attention_mask, position_ids, past_key_values.N.*; the cache is fed as past
// and comes back as a new present each Run, rows left-padded) and the fused
// layout toolrl model build --fused and onnxruntime-genai's builder write
// (GroupQueryAttention, no position_ids). A graph with a GroupQueryAttention
// node is run the fused way (fusedengine.go): each row's cache occupies
// columns [0, length) of one preallocated buffer per layer, bound as both past
// and present so a decode step appends in place; admitted prompts and
// injections are prefilled one item at a time into their row. Both layouts
// give the same trajectories for the same seeds (tested).
//
// # Logprob convention
//
// The logprob recorded for a sampled token is log-softmax(logits/T) over the
// full vocabulary, evaluated at the sampled id, before any top-k, top-p or
// min-p truncation: the quantity a trainer recomputes from the same logits.
// With temperature 0 (greedy decoding) it is log-softmax(logits), that is the
// same formula with T = 1. Policy.Score computes the same quantity
// teacher-forced (at temperature 1 by default), so recorded and recomputed
// logprobs agree to float32 rounding (tested within 1e-4).
//
// # Determinism across batch sizes
//
// Each trajectory draws its random numbers from its own RNG, seeded by
// SampleSeed(job seed, prompt id, sample index), and consumes exactly one
// draw per sampled token, so sampling does not depend on which other
// sequences share its batch. The logits themselves can differ in the last
// float32 bits between batch compositions (ONNX Runtime reduces over padded
// rows in a different order), which changes a token only when a uniform draw
// falls within that rounding of a probability boundary: the tests check that
// batch sizes 1, 3 and 16 give identical tokens.
package actor
