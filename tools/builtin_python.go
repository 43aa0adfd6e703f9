package tools

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/toolrl/toolrl/tools/python"
)

// pythonTool adapts package python: {"code": "print(6*7)"} → "42\n".
type pythonTool struct{ runner *python.Runner }

// NewPython returns the python tool, probing the host's sandbox once.
func NewPython(ctx context.Context, opts python.Options) (Tool, error) {
	r, err := python.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	iso := r.Isolation()
	if !iso.NetworkIsolated || iso.Landlock == 0 {
		slog.Warn("python tool sandbox is partial", "isolation", iso.String())
	}
	return &pythonTool{runner: r}, nil
}

func (b builder) python(ctx context.Context) ([]Tool, error) {
	var opts python.Options
	if err := b.decodeSettings(&opts); err != nil {
		return nil, err
	}
	opts.TempRoot = b.path(opts.TempRoot)
	t, err := NewPython(ctx, opts)
	if err != nil {
		return nil, err
	}
	return []Tool{t}, nil
}

func (p *pythonTool) Name() string { return "python" }

func (p *pythonTool) Description() string {
	return "Runs a Python 3 program in a sandbox without network access and returns what it printed."
}

func (p *pythonTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"a complete Python 3 program; print the values you need"}},"required":["code"],"additionalProperties":false}`)
}

func (p *pythonTool) Execute(ctx context.Context, args json.RawMessage) (Result, error) {
	var a struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return Result{}, InvalidArgs(err)
	}
	out, err := p.runner.Run(ctx, a.Code, false)
	if err != nil {
		return Result{}, err
	}
	text, err := python.Summary(out)
	if err != nil {
		return Result{}, err
	}
	return Result{Content: text}, nil
}
