package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func loadCalc(t *testing.T) *Registry {
	t.Helper()
	reg, err := LoadRegistry(context.Background(), "testdata/calc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return reg
}

func TestLoadRegistryCalc(t *testing.T) {
	reg := loadCalc(t)
	if got := strings.Join(reg.Names(), ","); got != "calculator" {
		t.Fatalf("Names() = %q", got)
	}
	tool, s, ok := reg.Lookup("calculator")
	if !ok || tool == nil {
		t.Fatal("Lookup(calculator) failed")
	}
	if s.Timeout.String() != "3s" || s.Concurrency != 32 || s.MaxOutput != 64 || s.Bracket != "CALC" || s.BracketArg != "expression" {
		t.Errorf("settings = %+v", s)
	}
	name, arg, ok := reg.Bracket("CALC")
	if !ok || name != "calculator" || arg != "expression" {
		t.Errorf("Bracket(CALC) = %q %q %v", name, arg, ok)
	}
	specs, err := json.Marshal(reg.Specs())
	if err != nil {
		t.Fatal(err)
	}
	var back []map[string]any
	if err := json.Unmarshal(specs, &back); err != nil {
		t.Fatal(err)
	}
	fn := back[0]["function"].(map[string]any)
	if back[0]["type"] != "function" || fn["name"] != "calculator" || fn["parameters"].(map[string]any)["type"] != "object" {
		t.Errorf("Specs() = %s", specs)
	}
	// The settings reached the tool: decimals 6.
	res, err := tool.Execute(context.Background(), json.RawMessage(`{"expression":"1/3"}`))
	if err != nil || res.Content != "0.333333" {
		t.Errorf("1/3 = %q, %v", res.Content, err)
	}
}

func TestLoadRegistryExample(t *testing.T) {
	reg, err := LoadRegistry(context.Background(), "testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if got := strings.Join(reg.Names(), ","); got != "calculator,python,search,weather" {
		t.Errorf("Names() = %q", got)
	}
	if got := strings.Join(reg.BracketNames(), ","); got != "CALC,SEARCH" {
		t.Errorf("BracketNames() = %q", got)
	}
	p := NewBracketParser(reg, ParserOptions{})
	r := p.Add("[SEARCH: capital of France]", true)
	if len(r.Calls) != 1 || !r.Calls[0].OK() || string(r.Calls[0].Arguments) != `{"query":"capital of France"}` {
		t.Fatalf("bracket search call = %+v", r.Calls)
	}
	res := NewExecutor(reg, ExecutorOptions{Logger: quiet}).Execute(context.Background(), r.Calls[0])
	if !res.OK || !strings.HasPrefix(res.Content, "[1] Paris (paris)") {
		t.Errorf("search result %+v", res)
	}
}

func TestParseRegistryJSON(t *testing.T) {
	doc := `{"defaults": {"timeout": "3s"}, "tools": [{"type": "calculator", "bracket": "CALC", "max_output": 16,
	  "function": {"name": "calc", "description": "math", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}}]}`
	reg, err := ParseRegistry(context.Background(), []byte(doc), ".")
	if err != nil {
		t.Fatal(err)
	}
	tool, s, ok := reg.Lookup("calc")
	if !ok || tool.Description() != "math" || s.Timeout.String() != "3s" || s.MaxOutput != 16 {
		t.Fatalf("calc: %v %+v", ok, s)
	}
	if name, arg, ok := reg.Bracket("CALC"); !ok || name != "calc" || arg != "expression" {
		t.Errorf("Bracket(CALC) = %q %q %v", name, arg, ok)
	}
}

func TestParseRegistryErrors(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"tools: []", "no tools listed"},
		{"tools:\n  - type: nope", `tools[0] (line 2): unknown type "nope"`},
		{"tools:\n  - bracket: X", "missing type"},
		{"tools:\n  - type: calculator\n    timeout: soon", `timeout: "soon" is not a duration`},
		{"tools:\n  - type: calculator\n    tiemout: 2s", "field tiemout not found"},
		{"tools:\n  - type: calculator\n    settings: {max_lenght: 3}", "field max_lenght not found"},
		{"tools:\n  - type: calculator\n    bracket: calc", "must match [A-Z][A-Z0-9_]*"},
		{"tools:\n  - type: calculator\n  - type: calculator", `"calculator": name already registered`},
		{"tools:\n  - type: calculator\n    function: {parameters: {type: 12}}", "does not compile"},
		{"tools:\n  - type: calculator\n    bracket: C\n    function: {parameters: {type: object}}", "cannot tell which argument"},
	}
	for _, c := range cases {
		_, err := ParseRegistry(context.Background(), []byte(c.doc), ".")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseRegistry(%q) = %v, want error containing %q", c.doc, err, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	reg := loadCalc(t)
	cases := []struct{ name, args, class string }{
		{"calculator", `{"expression":"1+1"}`, ""},
		{"calculator", `{"expression":1}`, ClassSchema},
		{"calculator", `{}`, ClassSchema},
		{"calculator", `{"expression":"1","x":2}`, ClassSchema},
		{"calculator", `[1]`, ClassBadJSON},
		{"calculator", `{"expression":`, ClassBadJSON},
		{"nope", `{}`, ClassUnknownTool},
	}
	for _, c := range cases {
		err := reg.Validate(c.name, json.RawMessage(c.args))
		if got := ClassOf(err); got != c.class {
			t.Errorf("Validate(%s, %s) class %q (%v), want %q", c.name, c.args, got, err, c.class)
		}
	}
	err := reg.Validate("calculator", json.RawMessage(`{"expression":1}`))
	if !strings.Contains(err.Error(), "at /expression") {
		t.Errorf("schema error lacks the location: %v", err)
	}
}
