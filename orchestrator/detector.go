package orchestrator

import "github.com/toolrl/toolrl/tools"

// callDetector is the runner's one actor.CallDetector. It adapts a
// tools.Parser (which sees every text delta of one sequence): it reports a
// completed call so the actor pauses the sequence, and keeps the parsed call
// for the runner. Under a PauseSchedule (RunOptions.Hooks.Pauses) it has no
// parser and completes the schedule's call after every interval sampled
// tokens instead.
type callDetector struct {
	parser tools.Parser
	// interval > 0: scheduled calls; seen counts the sampled tokens.
	interval, seen int
	scheduled      tools.Call
	// completed is the call that paused the sequence, until taken.
	completed *tools.Call
}

func newCallDetector(p tools.Parser) *callDetector { return &callDetector{parser: p} }

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
	res := d.parser.Add(delta, false)
	if len(res.Calls) == 0 {
		return false
	}
	// The parser stops at the first call of a chunk; text after it in the
	// same token (res.Rest) is model text recorded by the actor, before the
	// injected result, and is not parsed for a second call.
	c := res.Calls[0]
	d.completed = &c
	return true
}

// take returns the completed call and clears it.
func (d *callDetector) take() (tools.Call, bool) {
	if d.completed == nil {
		return tools.Call{}, false
	}
	c := *d.completed
	d.completed = nil
	return c, true
}

// flush ends the text (EOS or a length cap) and returns a call left open,
// which the parser reports as unterminated.
func (d *callDetector) flush() (tools.Call, bool) {
	if d.parser == nil {
		return tools.Call{}, false // a scheduled call is complete when made
	}
	res := d.parser.Add("", true)
	if len(res.Calls) == 0 {
		return tools.Call{}, false
	}
	return res.Calls[0], true
}
