package actor

// CallDetector watches the text a sequence generates and says when a tool
// call is complete. The engine calls Feed once per sampled token, in order,
// with the text that token completes (never a partial UTF-8 character;
// special tokens give "", as does a token that only starts a character),
// and pauses the sequence after the token whose delta completed a call. The
// orchestrator's runner has the one implementation: it adapts the tools
// package's streaming parsers (or, for benchmarks, follows a pause schedule,
// orchestrator.PauseSchedule) and keeps the parsed call to hand back. A
// detector belongs to one sequence and is used by one goroutine.
type CallDetector interface {
	// Feed consumes the next text delta and reports whether a call is now
	// complete. After a complete call the sequence pauses; Feed resumes with
	// the text generated after the injected result.
	Feed(delta string) (callComplete bool)
}

// TurnEnder is a CallDetector of a chat format whose calls are answered per
// assistant turn: Feed never pauses at a call's close; instead, when the
// model samples an EOS id, the engine asks EndTurn whether the turn that
// token ends holds calls. If so the sequence pauses (EventToolCall) with the
// end-of-turn token recorded as sampled (loss mask 1, its logprob), and the
// caller injects the tool turn; otherwise the sequence finishes as usual.
type TurnEnder interface {
	CallDetector
	// EndTurn ends the current turn's text and reports whether it made calls.
	EndTurn() (hasCalls bool)
}
