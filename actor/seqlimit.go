package actor

// MaxSeqLen is the most tokens a sequence of this engine may hold, prompt
// and response: EngineOptions.MaxSeqLen, else the model's
// max_position_embeddings (4096 when config.json has none). AddGroup refuses
// a prompt of MaxSeqLen tokens or more: it leaves no room for one sampled
// token.
func (e *Engine) MaxSeqLen() int { return e.maxLen }
