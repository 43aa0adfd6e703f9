package tools

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/toolrl/toolrl/traj"
)

const maxBracketName = 32

func validBracketName(s string) bool {
	if s == "" || len(s) > maxBracketName || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isBracketNameByte(s[i]) {
			return false
		}
	}
	return true
}

func isBracketNameByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

type bracketState int

const (
	bracketText bracketState = iota // outside a call
	bracketName                     // after "[", reading an upper-case name
	bracketArgs                     // after "[NAME:", reading up to "]"
)

// BracketParser recognises the bracket form [NAME: args], as in
// [CALC: 12 * 34]. NAME matches [A-Z][A-Z0-9_]* and is mapped to a tool by
// the registry's bracket settings; the text between ":" and the first "]"
// (trimmed) becomes the tool's bracket argument, e.g. {"expression":"12 * 34"}.
// A "[" not followed by such a name and ":" is ordinary text.
type BracketParser struct {
	reg   *Registry
	max   int
	known bool // KnownBracketsOnly
	state bracketState
	buf   strings.Builder // the pending "[NAME..." text
	name  string
}

// NewBracketParser returns a parser of the bracket form over reg.
func NewBracketParser(reg *Registry, opts ParserOptions) *BracketParser {
	max := opts.MaxCallBytes
	if max <= 0 {
		max = 1024
	}
	return &BracketParser{reg: reg, max: max, known: opts.KnownBracketsOnly}
}

// Add implements Parser.
func (p *BracketParser) Add(chunk string, done bool) ParseResult {
	if p.state == bracketText && strings.IndexByte(chunk, '[') < 0 {
		return ParseResult{Content: chunk} // the common case: plain text
	}
	var res ParseResult
	var content strings.Builder
	runStart := 0 // start of the current run of plain text in chunk
	for i := 0; i < len(chunk); i++ {
		c := chunk[i]
		switch p.state {
		case bracketText:
			if c == '[' {
				content.WriteString(chunk[runStart:i])
				p.buf.Reset()
				p.buf.WriteByte(c)
				p.state = bracketName
			}
		case bracketName:
			switch {
			case c == ':' && p.buf.Len() > 1 && p.isCallName(p.buf.String()[1:]):
				p.name = p.buf.String()[1:]
				p.buf.WriteByte(c)
				p.state = bracketArgs
			case isBracketNameByte(c) && (p.buf.Len() > 1 || c >= 'A' && c <= 'Z') && p.buf.Len() <= maxBracketName:
				p.buf.WriteByte(c)
			default:
				// Not a call: the held text is content; c starts a new run
				// (and may itself open a call).
				content.WriteString(p.buf.String())
				p.buf.Reset()
				p.state = bracketText
				runStart = i
				i-- // re-read c in the text state
			}
		case bracketArgs:
			p.buf.WriteByte(c)
			if c == ']' {
				res.Calls = []Call{p.finish()}
				res.Content = content.String()
				res.Rest = chunk[i+1:]
				p.state = bracketText
				return res
			}
			if p.buf.Len() > p.max {
				res.Calls = []Call{{
					Name: p.toolName(), Raw: p.buf.String(), Form: FormBracket,
					ErrorClass: ClassTooLong, Error: "bracket call longer than " + strconv.Itoa(p.max) + " bytes",
				}}
				p.buf.Reset()
				p.state = bracketText
				res.Content = content.String()
				res.Rest = chunk[i+1:]
				return res
			}
		}
	}
	if p.state == bracketText {
		content.WriteString(chunk[runStart:])
	}
	if done {
		switch p.state {
		case bracketName:
			content.WriteString(p.buf.String())
		case bracketArgs:
			res.Calls = []Call{{
				Name: p.toolName(), Raw: p.buf.String(), Form: FormBracket,
				ErrorClass: ClassUnterminated, Error: `the text ended before the closing "]"`,
			}}
		}
		p.buf.Reset()
		p.state = bracketText
	}
	res.Content = content.String()
	return res
}

// isCallName reports whether [name: opens a call.
func (p *BracketParser) isCallName(name string) bool {
	if !p.known {
		return true
	}
	_, _, ok := p.reg.Bracket(name)
	return ok
}

func (p *BracketParser) toolName() string {
	if tool, _, ok := p.reg.Bracket(p.name); ok {
		return tool
	}
	return p.name
}

// finish parses the complete call in p.buf.
func (p *BracketParser) finish() Call {
	raw := p.buf.String()
	p.buf.Reset()
	c := Call{Raw: raw, Form: FormBracket, Name: p.name}
	tool, arg, ok := p.reg.Bracket(p.name)
	if !ok {
		c.ErrorClass, c.Error = ClassUnknownTool, "no tool has the bracket name "+p.name
		return c
	}
	c.Name = tool
	text := strings.TrimSpace(raw[len(p.name)+2 : len(raw)-1])
	args, err := json.Marshal(map[string]string{arg: text})
	if err != nil { // unreachable: a map of strings always marshals
		c.ErrorClass, c.Error = ClassBadJSON, err.Error()
		return c
	}
	c.Arguments = args
	validate(p.reg, &c)
	return c
}

// BracketInjection is the text injected right after a bracket call's closing
// "]": " = " followed by the result's content (for a failed call the content
// is "error: <class>: <detail>"), so that the model reads
// "[CALC: 12 * 34] = 408".
func BracketInjection(r traj.ToolResult) string {
	return " = " + r.Content
}
