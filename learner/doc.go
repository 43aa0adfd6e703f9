// Package learner is toolrl's GRPO learner: the reference consumer of
// advantage records. It recomputes the current policy's logprobs of every
// trained token (teacher-forced, at the sampling temperature, over the full
// vocabulary, as the actor computes them), takes a PPO-clip policy-gradient
// step with dual clip, optional truncated importance sampling and a k3 KL to
// a reference policy, and publishes policy versions to a policy store. It
// trains the Llama-family models model/train can represent; larger models
// stay with external trainers that pull the same records (docs/learner.md).
package learner
