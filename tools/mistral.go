package tools

import (
	"strconv"
	"strings"
)

// mistralToolCalls is the special token that opens Mistral's list of calls.
const mistralToolCalls = "[TOOL_CALLS]"

// mistralBare is what a turn must begin with (after whitespace, spaces
// between the parts allowed) to be read as a call list whose [TOOL_CALLS]
// token gave "" text: '[', '{', then the "name" key.
const mistralBare = `[{"name"`

// MistralParser recognises Mistral's tool calls (FormMistral): [TOOL_CALLS]
// followed by a JSON array of {"name": ..., "arguments": {...}} objects,
// each a call, in order (vLLM's mistral parser and
// tool_chat_template_mistral_parallel.jinja). Text before [TOOL_CALLS] is
// content. Each call completes at the ',' or ']' after its object, so the
// calls of one turn come one per Add (Rest holds the text after each); the
// first call's Raw includes [TOOL_CALLS] and '[', the last's the closing
// ']'. An object that is not valid JSON or names no tool is one invalid
// call (ClassBadJSON) and the list goes on; text that breaks the list
// itself (not an object, ',' or ']' where one is due) makes the rest of
// the turn one bad_json call, and a turn that ends inside the list one
// unterminated call.
//
// [TOOL_CALLS] is a special token of Mistral's tokenizers, and the actor
// feeds special tokens as "" text: a turn whose text begins (after
// whitespace) with '[' '{' '"name"' (whitespace between them allowed) is
// therefore read as a call list whose marker was that token. Text holding
// the marker literally is read as above. Done=true ends the turn; the
// parser then starts a new one. Add costs O(len(chunk)).
type MistralParser struct {
	reg   *Registry
	max   int
	state mistralState
	// atStart: the turn has had only whitespace so far.
	atStart bool
	// pending holds text that may open a call list: a prefix of
	// [TOOL_CALLS] or, at the turn's start, of the bare form.
	pending strings.Builder
	scan    jsonScan
	raw     strings.Builder // the current call's text, markup included
	obj     strings.Builder // the current object's text
}

type mistralState uint8

const (
	mistralText        mistralState = iota // content, watching for the marker
	mistralBeforeArray                     // after [TOOL_CALLS], before '['
	mistralBeforeItem                      // after '[' or ',': an object is due
	mistralInObject                        // inside an object
	mistralAfterItem                       // after an object: ',' or ']' is due
	mistralBroken                          // the list broke: the rest of the turn is one bad call
	mistralDone                            // after ']': the rest of the turn is content
)

// NewMistralParser returns a parser of Mistral's [TOOL_CALLS] form over reg.
// opts.MaxCallBytes bounds one call's text (default 8192): a longer one
// fails as too_long and the rest of its turn is content.
func NewMistralParser(reg *Registry, opts ParserOptions) *MistralParser {
	max := opts.MaxCallBytes
	if max <= 0 {
		max = 8192
	}
	return &MistralParser{reg: reg, max: max, atStart: true}
}

// Add implements Parser.
func (p *MistralParser) Add(chunk string, done bool) ParseResult {
	var res ParseResult
	var content strings.Builder
	for i := 0; i < len(chunk); i++ {
		c := chunk[i]
		switch p.state {
		case mistralText:
			p.text(c, &content)
			continue
		case mistralDone:
			content.WriteString(chunk[i:])
			i = len(chunk)
			continue
		}
		if call, ok := p.list(c); ok {
			res.Calls = []Call{call}
			res.Rest = chunk[i+1:]
			res.Content = content.String()
			if res.Rest == "" && done {
				res.Content += p.end(&res)
			}
			return res
		}
		if p.raw.Len() > p.max {
			raw := p.raw.String()
			res.Calls = []Call{{Raw: raw, Form: FormMistral, Name: sniffName(raw),
				ErrorClass: ClassTooLong, Error: "tool call longer than " + strconv.Itoa(p.max) + " bytes"}}
			p.raw.Reset()
			p.obj.Reset()
			p.state = mistralDone
			res.Rest = chunk[i+1:]
			res.Content = content.String()
			if res.Rest == "" && done {
				res.Content += p.end(&res)
			}
			return res
		}
	}
	res.Content = content.String()
	if done {
		res.Content += p.end(&res)
	}
	return res
}

// text consumes one byte of content, watching for the start of a list.
func (p *MistralParser) text(c byte, content *strings.Builder) {
	if p.pending.Len() == 0 {
		switch {
		case c == '[':
			p.pending.WriteByte(c)
		case isSpace(c) && p.atStart:
			content.WriteByte(c)
		default:
			content.WriteByte(c)
			p.atStart = false
		}
		return
	}
	p.pending.WriteByte(c)
	pend := p.pending.String()
	switch {
	case pend == mistralToolCalls:
		p.pending.Reset()
		p.raw.WriteString(pend)
		p.state = mistralBeforeArray
	case strings.HasPrefix(mistralToolCalls, pend):
	case p.atStart && bareMatch(pend) == len(mistralBare):
		// A list whose marker was a special token: replay the held text
		// through the list's grammar (it closes no object).
		p.pending.Reset()
		p.state = mistralBeforeArray
		for j := 0; j < len(pend); j++ {
			p.list(pend[j])
		}
	case p.atStart && bareMatch(pend) >= 0 && len(pend) < 64:
	default:
		// A false start: the held text up to c is content; c may begin a
		// new one.
		content.WriteString(pend[:len(pend)-1])
		p.pending.Reset()
		p.atStart = false
		p.text(c, content)
	}
}

// bareMatch returns how many bytes of mistralBare the text matches, spaces
// between them skipped, or -1 when it is not a prefix of the bare form.
func bareMatch(s string) int {
	k := 0
	for i := 0; i < len(s); i++ {
		if k == len(mistralBare) {
			return -1
		}
		// Whitespace may come between '[', '{' and the key, not inside it.
		if isSpace(s[i]) && k <= 2 {
			continue
		}
		if s[i] != mistralBare[k] {
			return -1
		}
		k++
	}
	return k
}

// list consumes one byte of the call list and returns a call when the byte
// completed one.
func (p *MistralParser) list(c byte) (Call, bool) {
	p.raw.WriteByte(c)
	switch p.state {
	case mistralBeforeArray:
		switch {
		case isSpace(c):
		case c == '[':
			p.state = mistralBeforeItem
		default:
			p.state = mistralBroken
		}
	case mistralBeforeItem:
		switch {
		case isSpace(c):
		case c == '{':
			p.state = mistralInObject
			p.scan = jsonScan{}
			p.scan.step(c)
			p.obj.WriteByte(c)
		default: // an empty list or a trailing ',' too: no object to call

			p.state = mistralBroken
		}
	case mistralInObject:
		p.obj.WriteByte(c)
		if p.scan.step(c) {
			p.state = mistralAfterItem
		}
	case mistralAfterItem:
		switch {
		case isSpace(c):
		case c == ',' || c == ']':
			call := p.finish()
			p.state = mistralBeforeItem
			if c == ']' {
				p.state = mistralDone
			}
			return call, true
		default:
			p.state = mistralBroken
		}
	}
	return Call{}, false
}

// finish parses the current object into a call whose Raw is the call's
// text so far.
func (p *MistralParser) finish() Call {
	c := Call{Raw: p.raw.String(), Form: FormMistral}
	if decodeCallJSON(p.obj.String(), &c, false) {
		validate(p.reg, &c)
	}
	p.raw.Reset()
	p.obj.Reset()
	return c
}

// end closes the turn: held text is content, or a list left open one
// failed call (added to res when it has none yet); it returns the content.
func (p *MistralParser) end(res *ParseResult) string {
	var content string
	switch p.state {
	case mistralText:
		content = p.pending.String()
	case mistralBeforeArray, mistralBeforeItem, mistralInObject, mistralAfterItem, mistralBroken:
		raw := p.raw.String()
		c := Call{Raw: raw, Form: FormMistral, Name: sniffName(raw)}
		if p.state == mistralBroken {
			c.ErrorClass, c.Error = ClassBadJSON, "the text after [TOOL_CALLS] is not a JSON list of call objects"
		} else {
			c.ErrorClass, c.Error = ClassUnterminated, "the turn ended inside the [TOOL_CALLS] list"
		}
		if len(res.Calls) == 0 && raw != "" {
			res.Calls = []Call{c}
		} else {
			content = raw // cannot happen: a call ends the Add before the turn's end is seen
		}
	}
	p.state, p.atStart, p.scan = mistralText, true, jsonScan{}
	p.pending.Reset()
	p.raw.Reset()
	p.obj.Reset()
	return content
}
