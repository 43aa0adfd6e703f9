package orchestrator

import "github.com/toolrl/toolrl/tools"

// callDetector is the runner's one actor.CallDetector. It adapts a
// tools.Parser (which sees every text delta of one sequence). Under a
// PauseSchedule (RunOptions.Hooks.Pauses) it has no parser and completes the
// schedule's call after every interval sampled tokens instead.
//
// Without turn mode (plain formats) it reports a completed call so the
// actor pauses the sequence at once. In turn mode (Format.TurnCalls: chat
// formats) it collects every call the assistant turn makes and never pauses
// at a call; when the model samples its end-of-turn token the actor asks
// EndTurn, and a turn with calls pauses there, to be answered whole.
type callDetector struct {
	parser   tools.Parser
	turnMode bool
	// interval > 0: scheduled calls; seen counts the sampled tokens.
	interval, seen int
	scheduled      tools.Call
	// completed is the call that paused the sequence, until taken (plain).
	completed *tools.Call
	// turn holds the current turn's calls (turn mode); tokens and bytes
	// count what the turn has fed so far.
	turn          []turnCall
	tokens, bytes int
}

// turnCall is a call of an assistant turn and where in the turn it closed:
// after Tokens sampled tokens and Bytes bytes of the turn's text (the
// closing token included), so the turn's model segment can be split there.
type turnCall struct {
	call          tools.Call
	tokens, bytes int
}

func newCallDetector(p tools.Parser, turnMode bool) *callDetector {
	return &callDetector{parser: p, turnMode: turnMode}
}

// newScheduledDetector completes call after every interval sampled tokens
// (interval > 0).
func newScheduledDetector(interval int, call tools.Call) *callDetector {
	return &callDetector{interval: interval, scheduled: call}
}

// Feed implements actor.CallDetector.
func (d *callDetector) Feed(delta string) bool {
	if d.interval > 0 {
		// The engine feeds every sampled token, whatever its text.
		d.seen++
		if d.seen%d.interval != 0 {
			return false
		}
		c := d.scheduled
		d.completed = &c
		return true
	}
	d.tokens++
	d.bytes += len(delta)
	res := d.parser.Add(delta, false)
	if !d.turnMode {
		if len(res.Calls) == 0 {
			return false
		}
		// The parser stops at the first call of a chunk; text after it in
		// the same token (res.Rest) is model text recorded by the actor,
		// before the injected result, and is not parsed for a second call.
		c := res.Calls[0]
		d.completed = &c
		return true
	}
	// Turn mode: the rest of the token may open (or hold) the next call.
	for len(res.Calls) > 0 {
		for _, c := range res.Calls {
			d.turn = append(d.turn, turnCall{call: c, tokens: d.tokens, bytes: d.bytes})
		}
		if res.Rest == "" {
			break
		}
		res = d.parser.Add(res.Rest, false)
	}
	return false
}

// EndTurn implements actor.TurnEnder: the model sampled an end-of-turn
// token. The parser's end of text completes a call that only the turn's end
// completes (Llama-3.1's JSON turn) or reports one left open
// (unterminated); the turn pauses when it made any call. Outside turn mode
// it is always false: the sequence finishes.
func (d *callDetector) EndTurn() bool {
	if !d.turnMode || d.parser == nil {
		return false
	}
	res := d.parser.Add("", true)
	for _, c := range res.Calls {
		d.turn = append(d.turn, turnCall{call: c, tokens: d.tokens, bytes: d.bytes})
	}
	if len(d.turn) == 0 {
		d.tokens, d.bytes = 0, 0
		return false
	}
	return true
}

// take returns the completed call and clears it (plain mode and schedules).
func (d *callDetector) take() (tools.Call, bool) {
	if d.completed == nil {
		return tools.Call{}, false
	}
	c := *d.completed
	d.completed = nil
	return c, true
}

// takeTurn returns the ended turn's calls, in the order they closed, and
// starts the next turn (turn mode).
func (d *callDetector) takeTurn() []turnCall {
	calls := d.turn
	d.turn, d.tokens, d.bytes = nil, 0, 0
	return calls
}

// flush ends the text (EOS or a length cap) and returns the calls not yet
// answered: a call left open, which the parser reports as unterminated,
// and in turn mode the turn's complete calls, which are recorded but not
// run (the turn did not end: it was cut by a length cap).
func (d *callDetector) flush() []turnCall {
	if d.parser == nil {
		return nil // a scheduled call is complete when made
	}
	res := d.parser.Add("", true)
	calls := d.takeTurn()
	for _, c := range res.Calls {
		calls = append(calls, turnCall{call: c})
	}
	return calls
}
