package tools

import (
	"strconv"
	"strings"
)

// llama3PythonTag is the special token Llama-3.1/3.2 may write before a
// JSON tool call (and before a built-in tool's code).
const llama3PythonTag = "<|python_tag|>"

// Llama3Parser recognises Llama-3.1/3.2's JSON tool call (FormLlama3JSON):
// the whole assistant turn is one JSON object {"name": ..., "parameters":
// {...}} ("arguments" is accepted too), with leading and trailing
// whitespace allowed (leading whitespace is content, outside the call's
// Raw), as vLLM's tool_chat_template_llama3.1_json.jinja asks
// for and its llama3_json parser reads. Such a turn holds one call, so the
// call is complete only when the turn ends: Add with done=true (the end of
// the text, or the caller's flush at the turn's end token). A turn whose
// text is anything else (prose, JSON with other text around it, an object
// without "name" and "parameters"/"arguments", one cut off) is plain
// content, not a call; a turn that begins with '{' is held back as possible
// call text until it is decided.
//
// <|python_tag|>: the actor feeds special tokens as "" text, so the tag a
// model writes before its JSON is invisible here and the JSON is read as
// if bare (vLLM reads both the same way). Text holding the tag literally
// (toolrl tools parse, or a tokenizer where it is not special) is read the
// same way, the tag then part of the call's Raw. Llama's built-in tools
// (<|python_tag|>brave_search.call(query="...") or code, ended by
// <|eom_id|>) are not recognised: with the tag and <|eom_id|> both "" text
// they cannot be told from prose, so such a turn is content.
//
// After done=true the parser starts a new turn. Add costs O(len(chunk)) (a
// byte scan of the JSON nesting); the turn is parsed once, at its end.
type Llama3Parser struct {
	reg   *Registry
	max   int
	state llama3State
	// tag counts the bytes of a literal <|python_tag|> matched at the turn's
	// start.
	tag  int
	scan jsonScan
	held strings.Builder // the turn's text while it may be a call
}

type llama3State uint8

const (
	llama3Start   llama3State = iota // only whitespace (and a python tag) so far
	llama3Object                     // inside the JSON object
	llama3After                      // the object closed; only whitespace since
	llama3Content                    // not a call: the rest of the turn is content
)

// NewLlama3Parser returns a parser of the Llama-3.1 JSON form over reg.
// opts.MaxCallBytes bounds the held call text (default 8192): a longer one
// fails as too_long, the rest of its turn then being content.
func NewLlama3Parser(reg *Registry, opts ParserOptions) *Llama3Parser {
	max := opts.MaxCallBytes
	if max <= 0 {
		max = 8192
	}
	return &Llama3Parser{reg: reg, max: max}
}

// Add implements Parser.
func (p *Llama3Parser) Add(chunk string, done bool) ParseResult {
	var res ParseResult
	if p.state == llama3Content {
		res.Content = chunk
	} else {
		for i := 0; i < len(chunk); i++ {
			if p.state == llama3Content {
				res.Content += chunk[i:]
				break
			}
			if p.state == llama3Start && p.tag == 0 && isSpace(chunk[i]) {
				// Leading whitespace is content either way: not held.
				res.Content += chunk[i : i+1]
				continue
			}
			p.step(chunk[i])
			if p.state == llama3Content {
				// Not a call: what was held is content, and so is the rest.
				res.Content += p.held.String()
				p.held.Reset()
				continue
			}
			if p.held.Len() > p.max {
				held := p.held.String()
				res.Calls = []Call{{Raw: held, Form: FormLlama3JSON, Name: sniffName(held),
					ErrorClass: ClassTooLong, Error: "tool call longer than " + strconv.Itoa(p.max) + " bytes"}}
				p.held.Reset()
				p.state = llama3Content
				res.Rest = chunk[i+1:]
				if res.Rest == "" && done {
					p.reset()
				}
				return res
			}
		}
	}
	if done {
		if p.state == llama3After {
			if c, ok := p.finish(p.held.String()); ok {
				res.Calls = []Call{c}
			} else {
				res.Content += p.held.String()
			}
		} else {
			res.Content += p.held.String()
		}
		p.reset()
	}
	return res
}

// step consumes one byte of a turn that may still be a call, holding it.
func (p *Llama3Parser) step(c byte) {
	p.held.WriteByte(c)
	switch p.state {
	case llama3Start:
		switch {
		case p.tag > 0 && p.tag < len(llama3PythonTag):
			if c == llama3PythonTag[p.tag] {
				p.tag++
			} else {
				p.state = llama3Content
			}
		case c == '<' && p.tag == 0:
			p.tag = 1
		case isSpace(c):
		case c == '{':
			p.state = llama3Object
			p.scan.step(c)
		default:
			p.state = llama3Content
		}
	case llama3Object:
		if p.scan.step(c) {
			p.state = llama3After
		}
	case llama3After:
		if !isSpace(c) {
			p.state = llama3Content
		}
	}
}

// finish parses a turn's whole text, which held one JSON object: a call
// when the object names a tool and carries its arguments.
func (p *Llama3Parser) finish(held string) (Call, bool) {
	body := strings.TrimSpace(held)
	body = strings.TrimPrefix(body, llama3PythonTag)
	c := Call{Raw: held, Form: FormLlama3JSON}
	if !decodeCallJSON(body, &c, true) {
		return Call{}, false // not such an object: content
	}
	validate(p.reg, &c)
	return c, true
}

func (p *Llama3Parser) reset() {
	p.state, p.tag, p.scan = llama3Start, 0, jsonScan{}
	p.held.Reset()
}
