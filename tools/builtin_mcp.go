package tools

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"

	"github.com/toolrl/toolrl/tools/mcptool"
)

// mcpTool is one tool of an MCP server.
type mcpTool struct {
	server *mcptool.Server
	name   string // registry name (prefix + remote)
	remote string // the server's name for it
	desc   string
	schema json.RawMessage
}

// NewMCP starts an MCP server and returns its tools; the caller closes the
// returned server when done (LoadRegistry's registry does it on Close).
func NewMCP(ctx context.Context, opts mcptool.Options) ([]Tool, *mcptool.Server, error) {
	srv, err := mcptool.Start(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	var out []Tool
	for _, ti := range srv.Tools() {
		out = append(out, &mcpTool{server: srv, name: opts.Prefix + ti.Name, remote: ti.Name, desc: ti.Description, schema: ti.Schema})
	}
	return out, srv, nil
}

func (b builder) mcp(ctx context.Context) ([]Tool, error) {
	var opts mcptool.Options
	if err := b.decodeSettings(&opts); err != nil {
		return nil, err
	}
	if len(opts.Command) == 0 {
		return nil, errors.New("settings: command is required")
	}
	// A relative program path (with a slash) is relative to the registry file.
	if c := opts.Command[0]; strings.Contains(c, "/") && !filepath.IsAbs(c) {
		opts.Command[0] = b.path(c)
	}
	opts.Dir = b.path(opts.Dir)
	built, srv, err := NewMCP(ctx, opts)
	if err != nil {
		return nil, err
	}
	b.reg.addCloser(srv)
	return built, nil
}

func (m *mcpTool) Name() string            { return m.name }
func (m *mcpTool) Description() string     { return m.desc }
func (m *mcpTool) Schema() json.RawMessage { return m.schema }

func (m *mcpTool) Execute(ctx context.Context, args json.RawMessage) (Result, error) {
	out, err := m.server.Call(ctx, m.remote, args)
	if err != nil {
		return Result{}, err
	}
	return Result{Content: out}, nil
}
