package stream

// Fields of a prompts-stream entry (Keys.Prompts), which prompt.Enqueue
// writes and the workers' prompt.RedisFeed reads.
const (
	// FieldPrompt holds one prompt's JSON (a prompts-file line).
	FieldPrompt = "prompt"
	// FieldIteration holds the iteration the prompt is to be sampled in, a
	// decimal ≥ 0. An entry without it (written before iterations existed)
	// is iteration 0.
	FieldIteration = "iteration"
	// FieldMinPolicyVersion holds the least policy version the prompt may be
	// sampled with, a decimal ≥ 0; absent is 0. Enqueue writes it only when
	// it is above 0.
	FieldMinPolicyVersion = "min_policy_version"
)
