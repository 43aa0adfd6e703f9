package tools

import (
	"strconv"
	"strings"

	"github.com/toolrl/toolrl/traj"
)

const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"
)

// HermesParser recognises the Hermes/Qwen form
// <tool_call>{"name": "...", "arguments": {...}}</tool_call>. "arguments"
// may also be a string holding a JSON object, and "parameters" is accepted
// for "arguments", as models write both.
type HermesParser struct {
	reg    *Registry
	max    int
	inCall bool
	// matched counts the bytes of the open (outside a call) or close
	// (inside) tag matched so far. Each tag has '<' only at its start, so a
	// mismatch restarts the match at the current byte.
	matched int
	buf     strings.Builder // the call's text after "<tool_call>"
}

// NewHermesParser returns a parser of the Hermes form over reg.
func NewHermesParser(reg *Registry, opts ParserOptions) *HermesParser {
	max := opts.MaxCallBytes
	if max <= 0 {
		max = 8192
	}
	return &HermesParser{reg: reg, max: max}
}

// Add implements Parser.
func (p *HermesParser) Add(chunk string, done bool) ParseResult {
	if !p.inCall && p.matched == 0 && strings.IndexByte(chunk, '<') < 0 {
		return ParseResult{Content: chunk} // the common case: plain text
	}
	var res ParseResult
	var content strings.Builder
	runStart := 0 // start of pending plain text in chunk (outside a call)
	for i := 0; i < len(chunk); i++ {
		c := chunk[i]
		if !p.inCall {
			if c == hermesOpen[p.matched] {
				if p.matched == 0 {
					content.WriteString(chunk[runStart:i])
				}
				p.matched++
				if p.matched == len(hermesOpen) {
					p.inCall, p.matched = true, 0
					p.buf.Reset()
				}
				continue
			}
			if p.matched > 0 {
				// A false start: the held tag prefix is content. Part of it
				// may lie in an earlier chunk, so write it from the tag.
				content.WriteString(hermesOpen[:p.matched])
				p.matched = 0
				runStart = i
				if c == '<' {
					content.WriteString(chunk[runStart:i])
					p.matched = 1
				}
			}
			continue
		}
		p.buf.WriteByte(c)
		if c == hermesClose[p.matched] {
			p.matched++
		} else if c == '<' {
			p.matched = 1
		} else {
			p.matched = 0
		}
		if p.matched == len(hermesClose) {
			body := p.buf.String()
			body = body[:len(body)-len(hermesClose)]
			res.Calls = []Call{p.finish(body)}
			p.inCall, p.matched = false, 0
			p.buf.Reset()
			res.Content = content.String()
			res.Rest = chunk[i+1:]
			return res
		}
		if len(hermesOpen)+p.buf.Len() > p.max {
			res.Calls = []Call{{
				Raw: hermesOpen + p.buf.String(), Form: FormHermes, Name: sniffName(p.buf.String()),
				ErrorClass: ClassTooLong, Error: "tool call longer than " + strconv.Itoa(p.max) + " bytes",
			}}
			p.inCall, p.matched = false, 0
			p.buf.Reset()
			res.Content = content.String()
			res.Rest = chunk[i+1:]
			return res
		}
	}
	if !p.inCall && p.matched == 0 {
		content.WriteString(chunk[runStart:])
	}
	if done {
		if p.inCall {
			res.Calls = []Call{{
				Raw: hermesOpen + p.buf.String(), Form: FormHermes, Name: sniffName(p.buf.String()),
				ErrorClass: ClassUnterminated, Error: "the text ended before " + hermesClose,
			}}
		} else if p.matched > 0 {
			content.WriteString(hermesOpen[:p.matched])
		}
		p.inCall, p.matched = false, 0
		p.buf.Reset()
	}
	res.Content = content.String()
	return res
}

// finish parses the body of a complete call.
func (p *HermesParser) finish(body string) Call {
	c := Call{Raw: hermesOpen + body + hermesClose, Form: FormHermes}
	if decodeCallJSON(body, &c, false) {
		validate(p.reg, &c)
	}
	return c
}

// sniffName finds a "name" value in malformed call text, so that a failed
// call still records which tool it meant when that is readable.
func sniffName(body string) string {
	i := strings.Index(body, `"name"`)
	if i < 0 {
		return ""
	}
	rest := strings.TrimLeft(body[i+len(`"name"`):], " \t\n:")
	if !strings.HasPrefix(rest, `"`) {
		return ""
	}
	end := strings.IndexByte(rest[1:], '"')
	if end < 0 || end > 128 {
		return ""
	}
	return rest[1 : end+1]
}

// HermesInjection is the text that carries a result back in the Hermes form,
// as Qwen's chat template writes it inside the tool turn:
// "<tool_response>\n" + content + "\n</tool_response>". The orchestrator wraps
// it in the template's turn markup.
func HermesInjection(r traj.ToolResult) string {
	return "<tool_response>\n" + r.Content + "\n</tool_response>"
}
