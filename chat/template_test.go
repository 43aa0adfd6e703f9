package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func writeFolder(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const msgs = `[{"role": "user", "content": "hi"}]`

func render(t *testing.T, tmpl *Template, req Request) string {
	t.Helper()
	if req.Messages == nil {
		req.Messages = json.RawMessage(msgs)
	}
	out, err := tmpl.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLoadPicksTheTemplateAsTransformersDoes: chat_template.jinja over
// tokenizer_config.json, a named list's tool_use only with tools, special
// tokens from tokenizer_config.json as variables.
func TestLoadPicksTheTemplateAsTransformersDoes(t *testing.T) {
	named := `{"bos_token": {"content": "<s>"}, "eos_token": "</s>", "chat_template": [{"name": "default", "template": "D{{ bos_token }}{{ eos_token }}"}, {"name": "tool_use", "template": "T"}]}`
	dir := writeFolder(t, map[string]string{"tokenizer_config.json": named})
	for _, c := range []struct {
		withTools bool
		want      string
	}{{false, "D<s></s>"}, {true, "T"}} {
		tmpl, err := Load(dir, c.withTools)
		if err != nil {
			t.Fatal(err)
		}
		if got := render(t, tmpl, Request{}); got != c.want {
			t.Errorf("withTools %v: %q, want %q", c.withTools, got, c.want)
		}
	}
	os.WriteFile(filepath.Join(dir, TemplateFile), []byte("F{{ eos_token }}{{ messages[0].content }}"), 0o644)
	tmpl, err := Load(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(t, tmpl, Request{}); got != "F</s>hi" || !strings.HasSuffix(tmpl.Where, TemplateFile) {
		t.Errorf("with %s: %q from %s", TemplateFile, got, tmpl.Where)
	}
}

// TestLoadAndRenderErrorsNameTheFileAndKey covers the refusals: no
// template, no default in a named list, a template that does not compile,
// one that raises (naming the message), bad kwargs.
func TestLoadAndRenderErrorsNameTheFileAndKey(t *testing.T) {
	for _, c := range []struct {
		config string
		want   []string
	}{
		{`{"eos_token": "</s>"}`, []string{"tokenizer_config.json", "key chat_template", "missing"}},
		{`{"chat_template": [{"name": "x", "template": "X"}]}`, []string{"tokenizer_config.json key chat_template", `"default"`, "x"}},
		{`{"chat_template": 3}`, []string{"key chat_template", "neither a string"}},
		{`{"chat_template": "{% if %}"}`, []string{"compile chat template", "tokenizer_config.json key chat_template"}},
		{`{"chat_template": nope}`, []string{"tokenizer_config.json"}},
	} {
		_, err := Load(writeFolder(t, map[string]string{"tokenizer_config.json": c.config}), false)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %v, want it to contain %q", c.config, err, w)
			}
		}
	}
	tmpl, err := New(`{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('no tools here') }}{% endif %}{{ m.content }}{% endfor %}`, nil, "t.jinja")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render(Request{Messages: json.RawMessage(`[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "tool", "content": "c"}]`)})
	for _, w := range []string{"t.jinja", "message 2 (tool)", "no tools here"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("raising template: err = %v, want %q", err, w)
		}
	}
	for _, bad := range []string{`[1]`, `{"messages": []}`, `{"a": `} {
		if _, err := ParseKwargs(bad); err == nil || !strings.Contains(err.Error(), "chat_template_kwargs") {
			t.Errorf("kwargs %s: err = %v", bad, err)
		}
	}
}

// TestKwargsAndSchemasKeepTheirOrder: kwargs reach the template as
// variables of any JSON type, and a YAML mapping converts to JSON in the
// order written (tojson, with and without indent, prints it so).
func TestKwargsAndSchemasKeepTheirOrder(t *testing.T) {
	var doc struct {
		Kwargs Kwargs    `yaml:"kwargs"`
		Schema yaml.Node `yaml:"schema"`
	}
	src := "kwargs: {enable_thinking: false, depth: 2, tags: [b, a]}\nschema: {type: object, properties: {zeta: {type: string}, alpha: {type: object, properties: {y: {type: integer}, b: {type: string}}}}, required: [zeta]}\n"
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	if string(doc.Kwargs) != `{"enable_thinking":false,"depth":2,"tags":["b","a"]}` {
		t.Errorf("kwargs = %s", doc.Kwargs)
	}
	schema, err := JSONFromYAML(&doc.Schema)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := New(`{% if enable_thinking is false %}off {% endif %}{{ depth + 1 }} {{ tags|join(',') }} {{ schema|tojson }}
{{ schema | tojson(indent=2) }}`, nil, "t")
	if err != nil {
		t.Fatal(err)
	}
	kw, _ := ParseKwargs(`{"enable_thinking": false, "depth": 2, "tags": ["b", "a"], "schema": ` + string(schema) + `}`)
	got := render(t, tmpl, Request{Kwargs: kw})
	want := `off 3 b,a {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "object", "properties": {"y": {"type": "integer"}, "b": {"type": "string"}}}}, "required": ["zeta"]}
{
  "type": "object",
  "properties": {
    "zeta": {
      "type": "string"
    },
    "alpha": {
      "type": "object",
      "properties": {
        "y": {
          "type": "integer"
        },
        "b": {
          "type": "string"
        }
      }
    }
  },
  "required": [
    "zeta"
  ]
}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
