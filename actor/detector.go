package actor

import "strings"

// CallDetector watches the text a sequence generates and says when a tool
// call is complete. The engine calls Feed once per sampled token, in order,
// with the text that token completes (never a partial UTF-8 character;
// special tokens give "", as does a token that only starts a character),
// and pauses the sequence after the token whose delta completed a call. The
// orchestrator adapts the tools package's streaming parsers to it; the
// detector keeps whatever state it needs to hand the parsed call back to its
// owner. A detector belongs to one sequence and is used by one goroutine.
type CallDetector interface {
	// Feed consumes the next text delta and reports whether a call is now
	// complete. After a complete call the sequence pauses; Feed resumes with
	// the text generated after the injected result.
	Feed(delta string) (callComplete bool)
}

// BracketDetector detects calls of the bracket form "[NAME: arguments]" (for
// example "[CALC: 12 * 34]"), where NAME is an upper-case letter followed by
// upper-case letters, digits or '_'. A '[' that does not start such a name
// followed by ':' is ordinary text. Calls records the raw text of each
// completed call.
type BracketDetector struct {
	state int // 0 text, 1 name, 2 arguments
	buf   strings.Builder
	// Calls holds the raw text ("[CALC: 1+2]") of every completed call, in
	// order.
	Calls []string
}

// maxBracketCall bounds the text buffered for one call.
const maxBracketCall = 1024

// Feed implements CallDetector.
func (d *BracketDetector) Feed(delta string) bool {
	complete := false
	for i := 0; i < len(delta); i++ {
		c := delta[i]
		switch d.state {
		case 0:
			if c == '[' {
				d.buf.Reset()
				d.buf.WriteByte(c)
				d.state = 1
			}
		case 1:
			switch {
			case c == ':' && d.buf.Len() > 1:
				d.buf.WriteByte(c)
				d.state = 2
			case c >= 'A' && c <= 'Z' || (d.buf.Len() > 1 && (c >= '0' && c <= '9' || c == '_')):
				d.buf.WriteByte(c)
			case c == '[':
				d.buf.Reset()
				d.buf.WriteByte(c)
			default:
				d.state = 0
			}
		case 2:
			d.buf.WriteByte(c)
			if c == ']' {
				d.Calls = append(d.Calls, d.buf.String())
				d.state = 0
				complete = true
			} else if d.buf.Len() > maxBracketCall {
				d.state = 0
			}
		}
	}
	return complete
}
