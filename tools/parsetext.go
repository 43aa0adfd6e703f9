package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolrl/toolrl/traj"
)

// ExecuteText runs one call given as a tool name and its arguments' JSON
// text, as a person types them (toolrl tools call): arguments that are not
// valid JSON fail as ClassBadJSON without running anything.
func (e *Executor) ExecuteText(ctx context.Context, name, args string) traj.ToolResult {
	c := Call{Name: name, Arguments: json.RawMessage(args), Raw: args}
	if !json.Valid(c.Arguments) {
		c.ErrorClass, c.Error = ClassBadJSON, "arguments are not valid JSON"
	}
	return e.Execute(ctx, c)
}

// FoundCall is one call a parser found in a text (ParseText): the call as a
// trajectory records it and, when it was executed, its result and the text
// injected after it.
type FoundCall struct {
	Call   traj.ToolCall    `json:"call"`
	Result *traj.ToolResult `json:"result,omitempty"`
	Inject string           `json:"inject,omitempty"`
}

// ParseText feeds text to p as one whole model turn, as a rollout's parser
// sees it, and passes each call p finds to found, in order (an error from
// found stops the parse and is returned). With ex, each call is executed
// and inject gives the text injected after its result (FormInjection, or a
// model format's).
func ParseText(ctx context.Context, p Parser, text string, ex *Executor, inject func(traj.ToolResult) (string, error), found func(FoundCall) error) error {
	chunk, done := text, true
	for {
		r := p.Add(chunk, done)
		for _, c := range r.Calls {
			fc := FoundCall{Call: c.Traj()}
			if ex != nil {
				res := ex.Execute(ctx, c)
				fc.Result = &res
				text, err := inject(res)
				if err != nil {
					return fmt.Errorf("inject the result of %s: %w", c.Name, err)
				}
				fc.Inject = text
			}
			if err := found(fc); err != nil {
				return err
			}
		}
		if r.Rest == "" {
			if len(r.Calls) > 0 {
				// A call ended the text: let the parser see the end.
				chunk = ""
				continue
			}
			return nil
		}
		chunk = r.Rest
	}
}

// FormInjection is the text injected after a result of a call of the given
// form when no model folder's format decides it: the bracket and Hermes
// forms' own (BracketInjection, HermesInjection); for llama3_json and
// mistral the tool message's content, around which the model's chat
// template renders the turn (ipython, [TOOL_RESULTS]).
func FormInjection(form string, r traj.ToolResult) string {
	switch form {
	case FormHermes:
		return HermesInjection(r)
	case FormLlama3JSON, FormMistral:
		return r.Content
	}
	return BracketInjection(r)
}
