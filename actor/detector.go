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
