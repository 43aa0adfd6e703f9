package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toolrl/toolrl/chat"
	"github.com/toolrl/toolrl/internal/strictyaml"
)

// The registry file (YAML, or JSON, which YAML reads too):
//
//	defaults:            # optional; apply to every tool that sets none
//	  timeout: 5s
//	  concurrency: 8
//	  max_output: 512
//	tools:
//	  - type: calculator # the implementation: calculator|python|search|http|mcp
//	    bracket: CALC    # optional bracket-form name: [CALC: 12 * 34]
//	    bracket_arg: expression   # optional; default: the sole required argument
//	    timeout: 2s
//	    concurrency: 16
//	    max_output: 64   # tokens
//	    function:        # optional for built-ins: OpenAI function format
//	      name: calculator
//	      description: ...
//	      parameters: {type: object, properties: {...}, required: [...]}
//	    settings: {...}  # the implementation's own settings
//	    faults:          # optional, per tool: injected failures (faults.go)
//	      error_rate: 0.05
//	      timeout_rate: 0.05
//	      implicit_rate: 0.05   # calculator and search only
//	      latency: {dist: lognormal, median: 200ms, p99: 2s}   # or a duration
//
// An mcp entry expands into every tool of its server and takes no function.
type fileDoc struct {
	Defaults entryDoc   `yaml:"defaults"`
	Tools    []entryDoc `yaml:"tools"`
}

type entryDoc struct {
	Type        string       `yaml:"type"`
	Function    *functionDoc `yaml:"function"`
	Timeout     string       `yaml:"timeout"`
	Concurrency int          `yaml:"concurrency"`
	MaxOutput   int          `yaml:"max_output"`
	Bracket     string       `yaml:"bracket"`
	BracketArg  string       `yaml:"bracket_arg"`
	Settings    yaml.Node    `yaml:"settings"`
	Faults      *faultsDoc   `yaml:"faults"`
}

type functionDoc struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Parameters stays a node so the schema keeps the key order written:
	// chat templates print it, and apply_chat_template keeps that order.
	Parameters yaml.Node `yaml:"parameters"`
}

// LoadRegistry reads a registry file and builds its tools. Relative paths in
// settings (a search corpus, an MCP server's command or dir) are relative to
// the file's folder. MCP servers are started and listed under ctx; Close the
// registry to stop them.
func LoadRegistry(ctx context.Context, path string) (*Registry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tool registry: %w", err)
	}
	reg, err := ParseRegistry(ctx, data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("tool registry %s: %w", path, err)
	}
	return reg, nil
}

// ParseRegistry builds a registry from file contents; baseDir resolves
// relative paths.
func ParseRegistry(ctx context.Context, data []byte, baseDir string) (*Registry, error) {
	var doc fileDoc
	if err := strictyaml.Decode(data, &doc); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	// A second pass for the line of each entry, to name it in errors.
	var lines struct {
		Defaults yaml.Node   `yaml:"defaults"`
		Tools    []yaml.Node `yaml:"tools"`
	}
	_ = yaml.Unmarshal(data, &lines)
	if err := checkPositive(&lines.Defaults, "", entryPositive); err != nil {
		return nil, fmt.Errorf("defaults: %w", err)
	}
	if doc.Defaults.Faults != nil {
		return nil, fmt.Errorf("defaults: faults (line %d): faults are set per tool, in its entry", keyLine(&lines.Defaults, "faults"))
	}

	defTimeout, err := parseDuration(doc.Defaults.Timeout)
	if err != nil {
		return nil, fmt.Errorf("defaults: timeout: %w", err)
	}
	if len(doc.Tools) == 0 {
		return nil, errors.New("no tools listed")
	}
	reg := NewRegistry()
	for i, ent := range doc.Tools {
		where := fmt.Sprintf("tools[%d]", i)
		var node *yaml.Node
		if i < len(lines.Tools) {
			node = &lines.Tools[i]
			where += fmt.Sprintf(" (line %d)", lines.Tools[i].Line)
			if err := checkPositive(&lines.Tools[i], "", entryPositive); err != nil {
				reg.Close()
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		}
		if err := addEntry(ctx, reg, ent, node, doc.Defaults, defTimeout, baseDir); err != nil {
			reg.Close()
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	return reg, nil
}

func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration like 500ms or 2s", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be positive", s)
	}
	return d, nil
}

// addEntry builds and registers one entry; node is its YAML node (for the
// lines of its faults' keys; nil when unknown).
func addEntry(ctx context.Context, reg *Registry, ent entryDoc, node *yaml.Node, defaults entryDoc, defTimeout time.Duration, baseDir string) error {
	timeout, err := parseDuration(ent.Timeout)
	if err != nil {
		return fmt.Errorf("timeout: %w", err)
	}
	faultsNode := mappingValue(node, "faults")
	faults, err := parseFaults(ent.Faults, faultsNode)
	if err != nil {
		return fmt.Errorf("%s: %w", ent.Type, err)
	}
	s := Settings{
		Timeout:     timeout,
		Concurrency: ent.Concurrency,
		MaxOutput:   ent.MaxOutput,
		Bracket:     ent.Bracket,
		BracketArg:  ent.BracketArg,
		Faults:      faults,
	}
	if s.Timeout == 0 {
		s.Timeout = defTimeout
	}
	if s.Concurrency == 0 {
		s.Concurrency = defaults.Concurrency
	}
	if s.MaxOutput == 0 {
		s.MaxOutput = defaults.MaxOutput
	}
	b := builder{reg: reg, settings: &ent.Settings, baseDir: baseDir}
	var built []Tool
	switch ent.Type {
	case "calculator":
		built, err = b.calculator()
	case "python":
		built, err = b.python(ctx)
	case "search":
		built, err = b.search()
	case "http":
		built, err = b.http()
	case "mcp":
		if ent.Function != nil {
			return errors.New("an mcp entry takes no function: its tools come from the server")
		}
		if s.Bracket != "" {
			return errors.New("an mcp entry takes no bracket name")
		}
		built, err = b.mcp(ctx)
	case "":
		return errors.New("missing type (calculator|python|search|http|mcp)")
	default:
		return fmt.Errorf("unknown type %q (want calculator|python|search|http|mcp)", ent.Type)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", ent.Type, err)
	}
	for _, t := range built {
		if ent.Function != nil {
			t, err = override(t, ent.Function)
			if err != nil {
				return fmt.Errorf("%s: function: %w", ent.Type, err)
			}
		}
		if faults.ImplicitRate > 0 && !supportsImplicit(t) {
			return fmt.Errorf("%s: faults.implicit_rate (line %d): tool %q cannot make a plausible wrong result (implicit faults are for the calculator and search); use error_rate or timeout_rate", ent.Type, keyLine(faultsNode, "implicit_rate"), t.Name())
		}
		if err := reg.Register(t, s); err != nil {
			return err
		}
	}
	return nil
}

// builder builds the built-in tools of one registry entry. The builders that
// start something (python, mcp) take the registry load's ctx as an argument.
type builder struct {
	reg      *Registry
	settings *yaml.Node
	baseDir  string
}

// decodeSettings decodes the entry's settings strictly into v.
func (b builder) decodeSettings(v any) error {
	if b.settings.Kind == 0 {
		return nil
	}
	raw, err := yaml.Marshal(b.settings)
	if err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if err := strictyaml.Decode(raw, v); err != nil {
		return fmt.Errorf("settings (line %d): %w", b.settings.Line, err)
	}
	// A settings type of another package (python.Options) names its keys
	// whose 0 means the default; they are checked as the built-ins' are.
	if p, ok := v.(interface{ PositiveKeys() [][2]string }); ok {
		var keys []positiveKey
		for _, k := range p.PositiveKeys() {
			keys = append(keys, positiveKey{k[0], k[1]})
		}
		return b.positiveSettings(keys)
	}
	return nil
}

// path resolves p against the registry file's folder.
func (b builder) path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(b.baseDir, p)
}

// overridden is a tool renamed or re-described by its registry entry.
type overridden struct {
	Tool
	name, description string
	schema            json.RawMessage
}

func (o *overridden) Name() string            { return o.name }
func (o *overridden) Description() string     { return o.description }
func (o *overridden) Schema() json.RawMessage { return o.schema }

func override(t Tool, fn *functionDoc) (Tool, error) {
	o := &overridden{Tool: t, name: t.Name(), description: t.Description(), schema: t.Schema()}
	if fn.Name != "" {
		o.name = fn.Name
	}
	if fn.Description != "" {
		o.description = fn.Description
	}
	if !fn.Parameters.IsZero() && fn.Parameters.Tag != "!!null" {
		raw, err := chat.JSONFromYAML(&fn.Parameters)
		if err != nil {
			return nil, fmt.Errorf("parameters: %w", err)
		}
		o.schema = raw
	}
	return o, nil
}
