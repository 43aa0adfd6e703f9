// Package mcptool is a client for the tools of an MCP server that runs as a
// subprocess and speaks over stdio, through the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options say which server to start and which of its tools to expose.
type Options struct {
	// Command is the server program and its arguments.
	Command []string `yaml:"command" json:"command"`
	// Env sets variables of the server's environment. The server does not
	// inherit toolrl's: it gets the variables of DefaultEnv that toolrl has,
	// those PassEnv names, then Env (which wins).
	Env map[string]string `yaml:"env" json:"env"`
	// PassEnv names more of toolrl's variables to pass on (those it has).
	// toolrl's own variables (TOOLRL_*: $TOOLRL_REDIS_PASSWORD) are refused:
	// give a value the server needs in Env.
	PassEnv []string `yaml:"pass_env" json:"pass_env"`
	// Dir is the server's working directory.
	Dir string `yaml:"dir" json:"dir"`
	// Prefix is prepended to every tool name in the registry, e.g. "fs_".
	Prefix string `yaml:"prefix" json:"prefix"`
	// Include lists the server's tools to expose (default: all).
	Include []string `yaml:"include" json:"include"`
	// StartTimeout bounds the start: launching the server, the initialize
	// handshake and listing its tools (a Go duration, default 30s).
	StartTimeout string `yaml:"start_timeout" json:"start_timeout"`
	// Timeout bounds every request after the start, on top of the caller's
	// deadline (a Go duration, default 60s).
	Timeout string `yaml:"timeout" json:"timeout"`
}

// Default timeouts of Options.StartTimeout and Options.Timeout.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultTimeout      = 60 * time.Second
)

// DefaultEnv are the variables of toolrl's environment every server gets
// (those that are set): where programs are and whose they run as, the
// locale, the time zone and the temporary folder; no credentials.
var DefaultEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"}

// Environ returns the server's environment for opts (see Options.Env), in
// the NAME=value form of exec.Cmd.Env, sorted by name.
func Environ(opts Options) ([]string, error) {
	env := map[string]string{}
	for _, names := range [][]string{DefaultEnv, opts.PassEnv} {
		for _, k := range names {
			if strings.HasPrefix(k, "TOOLRL_") {
				return nil, fmt.Errorf("mcp pass_env %s: toolrl's own variables are not passed on (set the value in env if the server needs it)", k)
			}
			if k == "" || strings.Contains(k, "=") {
				return nil, fmt.Errorf("mcp pass_env %q: not a variable name", k)
			}
			if v, ok := os.LookupEnv(k); ok {
				env[k] = v
			}
		}
	}
	for k, v := range opts.Env {
		if k == "" || strings.Contains(k, "=") {
			return nil, fmt.Errorf("mcp env %q: not a variable name", k)
		}
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out, nil
}

// ErrTimeout marks a start or a request the server did not answer in time.
var ErrTimeout = errors.New("mcp server did not answer in time")

// duration parses a timeout option; "" is def.
func duration(name, v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("mcp %s %q: want a positive duration like 30s", name, v)
	}
	return d, nil
}

// ToolInfo describes one tool of the server.
type ToolInfo struct {
	Name        string
	Description string
	// Schema is the tool's input JSON Schema.
	Schema json.RawMessage
}

// Server is a running MCP server and the client session to it. It is safe
// for concurrent use; Close stops the process.
type Server struct {
	session *mcp.ClientSession
	tools   []ToolInfo
	command string        // the server command, for errors
	timeout time.Duration // per request
}

// Start runs the server, initialises the session and lists its tools, all
// under ctx and within StartTimeout; a server that does not answer in time
// is stopped and the error (wrapping ErrTimeout) names its command.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if len(opts.Command) == 0 {
		return nil, errors.New("mcp: command is required")
	}
	startTimeout, err := duration("start_timeout", opts.StartTimeout, DefaultStartTimeout)
	if err != nil {
		return nil, err
	}
	timeout, err := duration("timeout", opts.Timeout, DefaultTimeout)
	if err != nil {
		return nil, err
	}
	env, err := Environ(opts)
	if err != nil {
		return nil, err
	}
	command := strings.Join(opts.Command, " ")
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	// timedOut turns the start's own deadline into an error naming the
	// server; the caller's cancellation stays the caller's error.
	timedOut := func(what string, err error) error {
		if parent.Err() == nil && ctx.Err() != nil {
			return fmt.Errorf("mcp: %s %s: %w after %s", what, command, ErrTimeout, startTimeout)
		}
		return fmt.Errorf("mcp: %s %s: %w", what, command, err)
	}
	cmd := exec.Command(opts.Command[0], opts.Command[1:]...)
	cmd.Dir = opts.Dir
	cmd.Stderr = os.Stderr
	cmd.Env = env // never nil: a nil Env would inherit toolrl's
	client := mcp.NewClient(&mcp.Implementation{Name: "toolrl", Version: "v1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		return nil, timedOut("start", err)
	}
	s := &Server{session: session, command: command, timeout: timeout}
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			session.Close()
			return nil, timedOut("list tools of", err)
		}
		if len(opts.Include) > 0 && !slices.Contains(opts.Include, t.Name) {
			continue
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || t.InputSchema == nil {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		s.tools = append(s.tools, ToolInfo{Name: t.Name, Description: t.Description, Schema: schema})
	}
	for _, name := range opts.Include {
		if !slices.ContainsFunc(s.tools, func(t ToolInfo) bool { return t.Name == name }) {
			session.Close()
			return nil, fmt.Errorf("mcp: %s has no tool %q (include)", opts.Command[0], name)
		}
	}
	return s, nil
}

// Tools returns the tools listed at start, filtered by Include.
func (s *Server) Tools() []ToolInfo { return s.tools }

// ErrTool marks a result the server flagged as an error (isError).
var ErrTool = errors.New("mcp tool error")

// Call calls a tool with a JSON object of arguments, within ctx and the
// server's Timeout (past which the error wraps ErrTimeout and names the
// server's command), and returns its content as text: text parts joined by newlines, other parts as "[type]", and the
// structured content as JSON when there is no content. A result flagged
// isError is returned as an error wrapping ErrTool.
func (s *Server) Call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	var m map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &m); err != nil {
			return "", fmt.Errorf("mcp %s: arguments: %w", name, err)
		}
	}
	reqCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := s.session.CallTool(reqCtx, &mcp.CallToolParams{Name: name, Arguments: m})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if reqCtx.Err() != nil {
			return "", fmt.Errorf("mcp %s (%s): %w after %s", name, s.command, ErrTimeout, s.timeout)
		}
		return "", fmt.Errorf("mcp %s (%s): %w", name, s.command, err)
	}
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, "[image "+c.MIMEType+"]")
		case *mcp.AudioContent:
			parts = append(parts, "[audio "+c.MIMEType+"]")
		default:
			parts = append(parts, fmt.Sprintf("[%T]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil {
			parts = append(parts, string(b))
		}
	}
	text := strings.Join(parts, "\n")
	if res.IsError {
		return "", fmt.Errorf("%w: %s", ErrTool, text)
	}
	return text, nil
}

// Close ends the session and stops the server process.
func (s *Server) Close() error { return s.session.Close() }
