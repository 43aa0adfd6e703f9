package tools

import (
	"context"
	"encoding/json"

	"github.com/toolrl/toolrl/tools/httptool"
)

// httpTool adapts package httptool: the call's arguments are the POST body.
// Its name, description and schema come from the registry entry's function.
type httpTool struct{ client *httptool.Client }

// NewHTTP returns a tool named "http" that POSTs its arguments; give it a
// name and schema with the registry entry's function.
func NewHTTP(opts httptool.Options) (Tool, error) {
	c, err := httptool.New(opts)
	if err != nil {
		return nil, err
	}
	return &httpTool{client: c}, nil
}

func (b builder) http() ([]Tool, error) {
	var opts httptool.Options
	if err := b.decodeSettings(&opts); err != nil {
		return nil, err
	}
	if err := b.positiveSettings(httpPositive); err != nil {
		return nil, err
	}
	t, err := NewHTTP(opts)
	if err != nil {
		return nil, err
	}
	b.reg.addCloser(t.(*httpTool).client)
	return []Tool{t}, nil
}

func (h *httpTool) Name() string            { return "http" }
func (h *httpTool) Description() string     { return "Sends the arguments to a web service." }
func (h *httpTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }

func (h *httpTool) Execute(ctx context.Context, args json.RawMessage) (Result, error) {
	out, err := h.client.Post(ctx, args)
	if err != nil {
		return Result{}, err
	}
	return Result{Content: out}, nil
}
