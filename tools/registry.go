package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Settings are the execution settings of one registered tool. Zero values
// mean the executor's defaults.
type Settings struct {
	// Timeout bounds one call (0: the tool's own default, see Register, else
	// ExecutorOptions.DefaultTimeout).
	Timeout time.Duration
	// Concurrency bounds the calls of this tool in flight (0: only the
	// executor's global limit applies).
	Concurrency int
	// MaxOutput is the output budget in tokens (0: ExecutorOptions.MaxOutputTokens).
	MaxOutput int
	// Bracket is the name this tool answers to in the bracket form, e.g.
	// "CALC" for [CALC: 12 * 34]; empty means the tool has no bracket form.
	Bracket string
	// BracketArg is the argument that receives the bracket text (default: the
	// schema's only required property, or its only property).
	BracketArg string
	// Faults are the failures injected into this tool's calls (zero: none;
	// see Faults).
	Faults Faults
}

// Spec is one tool in the OpenAI function-calling format, as chat templates
// take it: {"type":"function","function":{"name":...,"description":...,"parameters":{...}}}.
type Spec struct {
	Type     string       `json:"type"`
	Function FunctionSpec `json:"function"`
}

// FunctionSpec is the "function" object of a Spec.
type FunctionSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type entry struct {
	tool     Tool
	settings Settings
	schema   *jsonschema.Schema
}

// Registry holds the tools a rollout may call. Build one with LoadRegistry or
// NewRegistry and Register; after that it is read-only and safe for
// concurrent use. Close it to stop the processes of MCP servers it started.
type Registry struct {
	entries  map[string]*entry
	order    []string
	brackets map[string]string // bracket name -> tool name
	closers  []io.Closer
	printer  *message.Printer // renders schema errors

	closeOnce sync.Once
	closeErr  error
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{entries: map[string]*entry{}, brackets: map[string]string{}, printer: message.NewPrinter(language.English)}
}

// Register adds a tool. A tool with a default timeout of its own (a method
// DefaultTimeout() time.Duration, as the calculator has) gets it when s sets
// none. It fails when the name is empty or taken, when the
// schema does not compile, or when the bracket name is taken or its argument
// cannot be determined.
func (r *Registry) Register(t Tool, s Settings) error {
	name := t.Name()
	if name == "" {
		return errors.New("register tool: empty name")
	}
	if _, ok := r.entries[name]; ok {
		return fmt.Errorf("register tool %q: name already registered", name)
	}
	if s.Timeout < 0 || s.Concurrency < 0 || s.MaxOutput < 0 {
		return fmt.Errorf("register tool %q: negative timeout, concurrency or max_output", name)
	}
	if s.Timeout == 0 {
		s.Timeout = toolDefaultTimeout(t)
	}
	if err := s.Faults.check(); err != nil {
		return fmt.Errorf("register tool %q: %w", name, err)
	}
	if s.Faults.ImplicitRate > 0 && !supportsImplicit(t) {
		return fmt.Errorf("register tool %q: faults: implicit_rate: the tool cannot make a plausible wrong result (implicit faults are for the calculator and search)", name)
	}
	sch, err := compileSchema(name, t.Schema())
	if err != nil {
		return err
	}
	if s.Bracket != "" {
		if !validBracketName(s.Bracket) {
			return fmt.Errorf("register tool %q: bracket name %q must match [A-Z][A-Z0-9_]* and be at most %d bytes", name, s.Bracket, maxBracketName)
		}
		if other, ok := r.brackets[s.Bracket]; ok {
			return fmt.Errorf("register tool %q: bracket name %q already maps to %q", name, s.Bracket, other)
		}
		if s.BracketArg == "" {
			s.BracketArg, err = soleArgument(t.Schema())
			if err != nil {
				return fmt.Errorf("register tool %q: bracket %q: %w (set bracket_arg)", name, s.Bracket, err)
			}
		}
		r.brackets[s.Bracket] = name
	}
	r.entries[name] = &entry{tool: t, settings: s, schema: sch}
	r.order = append(r.order, name)
	return nil
}

func compileSchema(name string, raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("register tool %q: parameters schema is not JSON: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	url := "toolrl:///tools/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("register tool %q: parameters schema: %w", name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("register tool %q: parameters schema does not compile: %w", name, err)
	}
	return sch, nil
}

// soleArgument returns the schema's only required property, or its only
// property.
func soleArgument(raw json.RawMessage) (string, error) {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("schema: %w", err)
	}
	if len(s.Required) == 1 {
		return s.Required[0], nil
	}
	if len(s.Required) == 0 && len(s.Properties) == 1 {
		for k := range s.Properties {
			return k, nil
		}
	}
	return "", fmt.Errorf("cannot tell which argument takes the bracket text (%d required, %d properties)", len(s.Required), len(s.Properties))
}

// Lookup returns the named tool and its settings.
func (r *Registry) Lookup(name string) (Tool, Settings, bool) {
	e, ok := r.entries[name]
	if !ok {
		return nil, Settings{}, false
	}
	return e.tool, e.settings, true
}

// Names returns the tool names in registration order.
func (r *Registry) Names() []string { return append([]string(nil), r.order...) }

// Len is the number of tools.
func (r *Registry) Len() int { return len(r.order) }

// Specs returns the tools in the OpenAI function-calling format, in
// registration order, for chat templates (json.Marshal gives the list).
func (r *Registry) Specs() []Spec {
	specs := make([]Spec, 0, len(r.order))
	for _, name := range r.order {
		t := r.entries[name].tool
		specs = append(specs, Spec{Type: "function", Function: FunctionSpec{
			Name: name, Description: t.Description(), Parameters: t.Schema(),
		}})
	}
	return specs
}

// Bracket maps a bracket-form name (CALC) to the tool name and the argument
// that receives the bracket text.
func (r *Registry) Bracket(bracketName string) (tool, arg string, ok bool) {
	tool, ok = r.brackets[bracketName]
	if !ok {
		return "", "", false
	}
	return tool, r.entries[tool].settings.BracketArg, true
}

// BracketNames returns the bracket-form names, sorted.
func (r *Registry) BracketNames() []string {
	names := make([]string, 0, len(r.brackets))
	for k := range r.brackets {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Validate checks a call's arguments against the named tool's schema. The
// error is an *Error of class unknown_tool, bad_json (not a JSON object) or
// schema.
func (r *Registry) Validate(name string, args json.RawMessage) error {
	e, ok := r.entries[name]
	if !ok {
		return Errorf(ClassUnknownTool, "no tool named %q", truncateForError(name))
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return Errorf(ClassBadJSON, "arguments: %v", err)
	}
	if _, ok := inst.(map[string]any); !ok {
		return Errorf(ClassBadJSON, "arguments must be a JSON object")
	}
	if err := e.schema.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return Errorf(ClassSchema, "%s", schemaMessage(ve, r.printer))
		}
		return Errorf(ClassSchema, "%v", err)
	}
	return nil
}

// schemaMessage flattens a validation error to one line: the innermost
// causes, each with its location.
func schemaMessage(ve *jsonschema.ValidationError, p *message.Printer) string {
	var msgs []string
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			loc := "/"
			if len(v.InstanceLocation) > 0 {
				loc = ""
				for _, p := range v.InstanceLocation {
					loc += "/" + p
				}
			}
			msgs = append(msgs, fmt.Sprintf("at %s: %s", loc, v.ErrorKind.LocalizedString(p)))
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	out := ""
	for i, m := range msgs {
		if i > 0 {
			out += "; "
		}
		out += m
	}
	return out
}

func truncateForError(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// addCloser registers a resource that Close releases (an MCP session).
func (r *Registry) addCloser(c io.Closer) { r.closers = append(r.closers, c) }

// Close releases what the registry started (MCP server processes). It is
// safe to call more than once.
func (r *Registry) Close() error {
	r.closeOnce.Do(func() {
		var errs []error
		for i := len(r.closers) - 1; i >= 0; i-- {
			if err := r.closers[i].Close(); err != nil {
				errs = append(errs, err)
			}
		}
		r.closeErr = errors.Join(errs...)
	})
	return r.closeErr
}

// toolDefaultTimeout is the tool's own default timeout (0: none), looking
// through a registry file's function override.
func toolDefaultTimeout(t Tool) time.Duration {
	t = unwrapTool(t)
	if d, ok := t.(interface{ DefaultTimeout() time.Duration }); ok {
		return d.DefaultTimeout()
	}
	return 0
}
