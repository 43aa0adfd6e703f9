package tools

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/toolrl/toolrl/traj"
)

// Call is one tool call recognised in model text, parsed and validated.
type Call struct {
	// Name is the registry name of the tool (for the bracket form, the tool
	// the bracket name maps to; the bracket name itself when it maps to none).
	Name string
	// Arguments is the compact JSON object of arguments; nil when the call
	// did not parse.
	Arguments json.RawMessage
	// Raw is the exact text of the call, markup included.
	Raw string
	// Form is the call form it was written in: FormBracket, FormHermes,
	// FormLlama3JSON or FormMistral.
	Form string
	// ErrorClass is empty for a valid call; otherwise one of unterminated,
	// bad_json, unknown_tool, schema, too_long, over_cap.
	ErrorClass string
	// Error is the detail of the failure.
	Error string

	// validated is set by the parsers once the registry accepted the
	// arguments, so that the executor does not validate them again.
	validated bool
}

// Call forms.
const (
	FormBracket = "bracket"
	FormHermes  = "hermes"
	// FormLlama3JSON is Llama-3.1/3.2's JSON tool call: the whole assistant
	// turn is one {"name": ..., "parameters": {...}} object, ended by
	// <|eot_id|> (vLLM's tool_chat_template_llama3.1_json.jinja); see
	// Llama3Parser.
	FormLlama3JSON = "llama3_json"
	// FormMistral is Mistral's [TOOL_CALLS] [{"name": ..., "arguments": ...}, ...]
	// turn (tool_chat_template_mistral_parallel.jinja); see MistralParser.
	FormMistral = "mistral"
)

// OK reports whether the call parsed and validated.
func (c Call) OK() bool { return c.ErrorClass == "" }

// Traj converts the call to the trajectory record.
func (c Call) Traj() traj.ToolCall {
	tc := traj.ToolCall{Name: c.Name, Arguments: c.Arguments, Raw: c.Raw}
	if c.ErrorClass != "" {
		tc.ParseError = c.ErrorClass + ": " + c.Error
	}
	return tc
}

// ParseResult is what one Add recognised.
type ParseResult struct {
	// Content is the text of this chunk (plus text held back from earlier
	// chunks) that is not part of a call. Text that might open a call is held
	// back until it is decided.
	Content string
	// Calls holds at most one call: the call that completed (or failed) in
	// this chunk. Parsing stops right after it; see Rest.
	Calls []Call
	// Rest is the part of the chunk after the call's end, not yet parsed.
	// It is non-empty only when a call completed mid-chunk: the caller that
	// pauses at the call knows the chunk ran past it, and one that goes on
	// passes Rest to the next Add.
	Rest string
}

// Parser recognises tool calls in text as it is generated. Add is called
// with every decoded delta of one sequence, in order, and done=true on the
// last (which may be empty); each call costs O(len(chunk)) (plus, when a call
// completes, its parsing and validation). Feed only model text, never the
// injected tool results. A Parser serves one sequence and is not safe for
// concurrent use.
type Parser interface {
	Add(chunk string, done bool) ParseResult
}

// ParserOptions bound what a parser accepts. The zero value means defaults.
type ParserOptions struct {
	// MaxCallBytes is the longest call, markup included, before it fails as
	// too_long (default 1024 for the bracket form, 8192 for the others).
	MaxCallBytes int
	// KnownBracketsOnly makes the bracket parser treat [NAME: ...] with a
	// NAME no tool answers to as plain text, instead of an unknown_tool call
	// (for models that also write things like [NOTE: ...]).
	KnownBracketsOnly bool
}

// Forms returns the call forms NewParser knows, in the order help texts
// name them (a new slice).
func Forms() []string { return []string{FormBracket, FormHermes, FormLlama3JSON, FormMistral} }

// NewParser returns the parser for a form name (one of Forms).
func NewParser(form string, reg *Registry, opts ParserOptions) (Parser, error) {
	switch form {
	case FormBracket:
		return NewBracketParser(reg, opts), nil
	case FormHermes:
		return NewHermesParser(reg, opts), nil
	case FormLlama3JSON:
		return NewLlama3Parser(reg, opts), nil
	case FormMistral:
		return NewMistralParser(reg, opts), nil
	}
	return nil, errors.New("unknown tool-call form " + form + " (want " + strings.Join(Forms(), ", ") + ")")
}

// validate fills the error fields of c from the registry's verdict.
func validate(reg *Registry, c *Call) {
	c.validated = true
	if err := reg.Validate(c.Name, c.Arguments); err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			c.ErrorClass, c.Error = ce.Class, ce.Err.Error()
		} else {
			c.ErrorClass, c.Error = ClassSchema, err.Error()
		}
	}
}
