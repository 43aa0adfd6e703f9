// Package chat renders a model's own chat template (its tokenizer_config.json
// chat_template, or a chat_template.jinja beside it) as Hugging Face's
// apply_chat_template does: OpenAI-style messages (with tool_calls, tool
// messages and reasoning_content), the tools list, add_generation_prompt, the
// special tokens and chat_template_kwargs as template variables. JSON keeps
// its key order throughout, as Python does, so a tool schema renders in the
// order it was written. Rollouts and `toolrl chat render` render through this
// package; it renders text, and callers tokenize it (without the
// post-processor: the template writes its own BOS).
package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Template is a compiled chat template. It is safe for concurrent use.
type Template struct {
	// Where names the template's source in errors: a file, and the key
	// within it ("…/tokenizer_config.json key chat_template").
	Where string
	// Source is the template text.
	Source string
	// Special maps special-token variables (bos_token, eos_token, unk_token,
	// sep_token, pad_token, cls_token, mask_token) to their text, as
	// transformers passes them to the template.
	Special map[string]string
	tmpl    *jinja.Template
}

// Request is one rendering.
type Request struct {
	// Messages is a JSON array of OpenAI-style messages: {role, content},
	// an assistant's tool_calls ([{type, id, function: {name, arguments}}],
	// arguments an object or a JSON string, passed as given), tool messages
	// ({role: tool, content, name, tool_call_id}) and reasoning_content.
	Messages json.RawMessage
	// Tools is a JSON array of OpenAI function specs, or nil for none (the
	// template then sees tools as none, as transformers passes it).
	Tools json.RawMessage
	// AddGenerationPrompt appends the opening of an assistant turn.
	AddGenerationPrompt bool
	// Kwargs are extra template variables (chat_template_kwargs).
	Kwargs Kwargs
}

// specialTokenKeys are the tokenizer_config.json keys transformers passes
// to every template (SPECIAL_TOKEN_ATTRIBUTES).
var specialTokenKeys = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// TemplateFile is the separate template file newer Hugging Face folders
// ship; when present it is the template, as in transformers.
const TemplateFile = "chat_template.jinja"

// Load reads the chat template of a model folder: dir/chat_template.jinja
// when present, else tokenizer_config.json's chat_template (a string, or a
// list of {name, template}: "tool_use" when withTools and it has one, else
// "default"). The special tokens come from tokenizer_config.json.
func Load(dir string, withTools bool) (*Template, error) {
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	var cfg map[string]json.RawMessage
	data, err := os.ReadFile(cfgPath)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", cfgPath, err)
		}
	case errors.Is(err, os.ErrNotExist):
	default:
		return nil, fmt.Errorf("read chat template: %w", err)
	}
	special := map[string]string{}
	for _, k := range specialTokenKeys {
		if s := tokenText(cfg[k]); s != "" {
			special[k] = s
		}
	}
	filePath := filepath.Join(dir, TemplateFile)
	if text, err := os.ReadFile(filePath); err == nil {
		return New(string(text), special, filePath)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read chat template: %w", err)
	}
	if cfg == nil {
		return nil, fmt.Errorf("read chat template: %s: %w (and no %s)", cfgPath, os.ErrNotExist, TemplateFile)
	}
	raw, ok := cfg["chat_template"]
	if !ok || string(raw) == "null" {
		return nil, fmt.Errorf("%s: key chat_template: missing, and the folder has no %s (use format: plain, or a model with a chat template)", cfgPath, TemplateFile)
	}
	var text string
	where := cfgPath + " key chat_template"
	if err := json.Unmarshal(raw, &text); err != nil {
		var named []struct{ Name, Template string }
		if err := json.Unmarshal(raw, &named); err != nil {
			return nil, fmt.Errorf("%s: neither a string nor a list of {name, template}", where)
		}
		var names []string
		byName := map[string]string{}
		for _, n := range named {
			names = append(names, n.Name)
			byName[n.Name] = n.Template
		}
		pick := "default"
		if _, ok := byName["tool_use"]; ok && withTools {
			pick = "tool_use"
		}
		t, ok := byName[pick]
		if !ok {
			return nil, fmt.Errorf("%s: no template named %q among %s", where, pick, strings.Join(names, ", "))
		}
		text, where = t, fmt.Sprintf("%s[%s]", where, pick)
	}
	return New(text, special, where)
}

// tokenText reads a special token given as a string or as {"content": ...}.
func tokenText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct{ Content string }
	if json.Unmarshal(raw, &obj) == nil {
		return obj.Content
	}
	return ""
}

// indentedToJSON matches `x | tojson(indent=N)` on a plain variable path.
var indentedToJSON = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[^\[\]{}%]*\])*)\s*\|\s*tojson\(\s*indent\s*=\s*([0-9]+)\s*\)`)

// indentFunc is the template function that indentedToJSON calls instead.
const indentFunc = "__toolrl_tojson_indent"

// New compiles a template; special holds the special-token variables and
// where names the source in errors.
func New(source string, special map[string]string, where string) (*Template, error) {
	// ardanlabs/jinja v1.8.0 writes tojson(indent=N) through a Go map, which
	// sorts keys (and escapes <, >, &): Llama-3.1's tool template prints
	// every tool schema that way. Such calls go to a function that keeps
	// insertion order, as Python's json.dumps does.
	rewritten := indentedToJSON.ReplaceAllString(source, indentFunc+"($1, $2)")
	tmpl, err := jinja.Compile(rewritten)
	if err != nil {
		return nil, fmt.Errorf("compile chat template (%s): %w", where, err)
	}
	if special == nil {
		special = map[string]string{}
	}
	return &Template{Where: where, Source: source, Special: special, tmpl: tmpl}, nil
}

// reservedVars are the variables a rendering sets itself; kwargs may not.
var reservedVars = []string{"messages", "tools", "documents", "add_generation_prompt"}

// Render renders a conversation. A template that fails names the template's
// source and the first message from which it fails.
func (t *Template) Render(req Request) (string, error) {
	msgs, err := jinjaValue(req.Messages)
	if err != nil {
		return "", fmt.Errorf("chat messages: %w", err)
	}
	if !msgs.IsList() {
		return "", errors.New("chat messages: not a JSON array")
	}
	data, err := t.vars(req)
	if err != nil {
		return "", err
	}
	data["messages"] = msgs
	out, err := t.tmpl.RenderValues(data)
	if err == nil {
		return out, nil
	}
	return "", fmt.Errorf("render chat template (%s)%s: %w", t.Where, t.failingMessage(msgs, data), err)
}

// vars returns the template variables of req except messages.
func (t *Template) vars(req Request) (map[string]jinja.Value, error) {
	data := map[string]jinja.Value{
		"add_generation_prompt": jinja.NewBool(req.AddGenerationPrompt),
		"tools":                 jinja.None(),
		"documents":             jinja.None(),
		indentFunc:              jinja.NewCallable(indentFunc, toJSONIndent),
	}
	for k, v := range t.Special {
		data[k] = jinja.NewString(v)
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		tools, err := jinjaValue(req.Tools)
		if err != nil {
			return nil, fmt.Errorf("chat tools: %w", err)
		}
		data["tools"] = tools
	}
	if len(req.Kwargs) > 0 {
		kw, err := jinjaValue(req.Kwargs)
		if err != nil || !kw.IsDict() {
			return nil, fmt.Errorf("chat_template_kwargs: not a JSON object")
		}
		d := kw.AsDict()
		for _, k := range d.Keys {
			if slices.Contains(reservedVars, k) {
				return nil, fmt.Errorf("chat_template_kwargs: key %s is set by the renderer itself", k)
			}
			data[k] = d.Data[k]
		}
	}
	return data, nil
}

// failingMessage renders ever longer prefixes of the conversation to name
// the first message from which the template fails ("" when none does alone).
func (t *Template) failingMessage(msgs jinja.Value, data map[string]jinja.Value) string {
	items := msgs.AsList().Items
	for k := 1; k <= len(items); k++ {
		data["messages"] = jinja.NewList(items[:k])
		if _, err := t.tmpl.RenderValues(data); err != nil {
			role := "?"
			if items[k-1].IsDict() {
				if r, ok := items[k-1].AsDict().Get("role"); ok && r.IsString() {
					role = r.AsString()
				}
			}
			return fmt.Sprintf(", at message %d (%s)", k-1, role)
		}
	}
	return ""
}

// toJSONIndent is tojson(indent=N) with Python's key order and separators.
func toJSONIndent(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 || !args[1].IsInt() {
		return jinja.Undefined(), errors.New("tojson(indent=N): want a value and an integer indent")
	}
	var b strings.Builder
	if err := writeJSON(&b, args[0], int(args[1].AsInt()), 0); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(b.String()), nil
}

// marshalOrdered writes v as JSON without escaping <, > and &.
func marshalOrdered(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
