package tools

import (
	"context"
	"encoding/json"
)

// Tool is one callable tool. Implementations must be safe for concurrent use:
// the executor calls Execute from many goroutines, up to the tool's
// concurrency setting.
type Tool interface {
	// Name is the name the model calls the tool by.
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Schema is the JSON Schema of the arguments object (the "parameters" of
	// the OpenAI function-calling format).
	Schema() json.RawMessage
	// Execute runs one call with arguments that already passed Schema. It must
	// return promptly once ctx is done; the executor returns a timeout at the
	// deadline either way, but a tool that ignores ctx keeps its goroutine
	// (and its concurrency slot) until it returns.
	Execute(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is what a tool call produced.
type Result struct {
	// Content is the text shown to the model, before normalisation and
	// truncation by the executor.
	Content string
}

// Func adapts a function to Tool. It is how tests and embedding programs
// register a tool without declaring a type.
type Func struct {
	ToolName        string
	ToolDescription string
	// ToolSchema is the arguments schema; nil means {"type":"object"}.
	ToolSchema json.RawMessage
	Fn         func(ctx context.Context, args json.RawMessage) (Result, error)
}

// Name implements Tool.
func (f *Func) Name() string { return f.ToolName }

// Description implements Tool.
func (f *Func) Description() string { return f.ToolDescription }

// Schema implements Tool.
func (f *Func) Schema() json.RawMessage {
	if f.ToolSchema == nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	return f.ToolSchema
}

// Execute implements Tool.
func (f *Func) Execute(ctx context.Context, args json.RawMessage) (Result, error) {
	return f.Fn(ctx, args)
}
