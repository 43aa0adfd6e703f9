package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ardanlabs/jinja"

	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// Encoder is the part of a tokenizer the formats need.
type Encoder interface {
	Encode(text string, addSpecial bool) ([]int32, error)
}

// Format turns prompts into the tokens the policy sees, and tool results into
// the tokens injected after a call. Every piece is tokenized once, on its own,
// and never re-tokenized: the trajectory's tokens are exactly these.
type Format interface {
	// Name is "plain" or "chat".
	Name() string
	// CallForm is the tool-call syntax the policy writes: "bracket" or "hermes".
	CallForm() string
	// TurnCalls reports how calls are answered. False (plain formats): the
	// sequence pauses as soon as a call closes and that one result is
	// injected. True (chat formats): the model goes on sampling after a call
	// until it ends its turn with its own end-of-turn token (sampled, loss
	// mask 1), and all of the turn's calls are answered together in one
	// injected tool turn.
	TurnCalls() bool
	// PromptTokens renders and tokenizes a prompt.
	PromptTokens(p *Prompt) ([]int32, error)
	// Injection returns the text and tokens injected after a turn's calls
	// (mask 0): one result per call, in call order, with the turn markup
	// around them. Without TurnCalls it is given exactly one result.
	Injection(results []traj.ToolResult) (ToolTurn, error)
}

// ToolTurn is what a Format injects after a turn's calls.
type ToolTurn struct {
	Text string
	IDs  []int32
	// Ends[i] is the end offset in IDs of the part that answers call i:
	// call i's part is IDs[Ends[i-1]:Ends[i]] (from 0 for i = 0), so each
	// result gets its own tool segment. The last end is len(IDs).
	Ends []int
}

// singleResult checks that a format without TurnCalls was given one result.
func singleResult(results []traj.ToolResult) (traj.ToolResult, error) {
	if len(results) != 1 {
		return traj.ToolResult{}, fmt.Errorf("inject tool results: this format answers one call at a time, got %d results", len(results))
	}
	return results[0], nil
}

// PromptFormat is a model folder's prompt_format.json: the plain format of
// the default model.
type PromptFormat struct {
	Kind string `json:"kind"`
	// Template holds "{prompt}" where the prompt's text goes.
	Template       string `json:"template"`
	ToolCallFormat string `json:"tool_call_format"`
	// AddSpecial says whether the tokenizer's post-processor (BOS) applies to
	// the rendered prompt; default true.
	AddSpecial *bool `json:"add_special,omitempty"`
}

// LoadPromptFormat reads dir/prompt_format.json; ok is false when the folder
// ships none.
func LoadPromptFormat(dir string) (PromptFormat, bool, error) {
	path := filepath.Join(dir, "prompt_format.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return PromptFormat{}, false, nil
	}
	if err != nil {
		return PromptFormat{}, false, err
	}
	var pf PromptFormat
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pf); err != nil {
		return PromptFormat{}, false, fmt.Errorf("%s: %w", path, err)
	}
	if pf.Kind != "plain" {
		return PromptFormat{}, false, fmt.Errorf("%s: field kind: %q, want plain", path, pf.Kind)
	}
	if !strings.Contains(pf.Template, "{prompt}") {
		return PromptFormat{}, false, fmt.Errorf("%s: field template: has no {prompt}", path)
	}
	switch pf.ToolCallFormat {
	case "":
		pf.ToolCallFormat = tools.FormBracket
	case tools.FormBracket, tools.FormHermes:
	default:
		return PromptFormat{}, false, fmt.Errorf("%s: field tool_call_format: %q, want bracket or hermes", path, pf.ToolCallFormat)
	}
	return pf, true, nil
}

// plainFormat renders Template with the prompt text and injects results in
// the call form's own syntax (" = 408" after a bracket call).
type plainFormat struct {
	spec PromptFormat
	enc  Encoder
}

// NewPlainFormat returns the plain format of spec.
func NewPlainFormat(spec PromptFormat, enc Encoder) Format {
	return &plainFormat{spec: spec, enc: enc}
}

func (f *plainFormat) Name() string     { return "plain" }
func (f *plainFormat) CallForm() string { return f.spec.ToolCallFormat }
func (f *plainFormat) TurnCalls() bool  { return false }

func (f *plainFormat) PromptTokens(p *Prompt) ([]int32, error) {
	text := p.Prompt
	if text == "" {
		// A chat-shaped prompt in plain format: the last user message is the question.
		for i := len(p.Messages) - 1; i >= 0; i-- {
			if p.Messages[i].Role == "user" {
				text = p.Messages[i].Content
				break
			}
		}
	}
	if text == "" {
		return nil, fmt.Errorf("prompt %q: plain format needs a prompt or a user message", p.ID)
	}
	addSpecial := f.spec.AddSpecial == nil || *f.spec.AddSpecial
	ids, err := f.enc.Encode(strings.ReplaceAll(f.spec.Template, "{prompt}", text), addSpecial)
	if err != nil {
		return nil, fmt.Errorf("tokenize prompt %q: %w", p.ID, err)
	}
	return ids, nil
}

func (f *plainFormat) Injection(results []traj.ToolResult) (ToolTurn, error) {
	r, err := singleResult(results)
	if err != nil {
		return ToolTurn{}, err
	}
	text := tools.BracketInjection(r)
	if f.spec.ToolCallFormat == tools.FormHermes {
		text = tools.HermesInjection(r)
	}
	ids, err := f.enc.Encode(text, false)
	if err != nil {
		return ToolTurn{}, fmt.Errorf("tokenize tool result: %w", err)
	}
	return ToolTurn{Text: text, IDs: ids, Ends: []int{len(ids)}}, nil
}

// chatFormat renders the model's own chat template (tokenizer_config.json)
// with the Hermes call form. The markup around a tool result is derived once
// from the template itself, by rendering a probe conversation, and tokenized
// once: before-result and after-result pieces, so a multi-turn trajectory's
// tokens equal the tokenization of the rendered conversation.
type chatFormat struct {
	tmpl      *jinja.Template
	enc       Encoder
	system    string
	toolsJSON []byte
	vars      map[string]jinja.Value
	// before and after wrap a result's content in the tool turn.
	before, after       string
	beforeIDs, afterIDs []int32
	// noToolTurn is why the template has no tool turn (nil when it has one).
	noToolTurn error
}

const (
	probeUser   = "\x00toolrl-probe-user\x00"
	probeResult = "\x00toolrl-probe-result\x00"
	probeCall   = "toolrl_probe_call"
)

// ChatTemplateConfig is what the chat format reads from tokenizer_config.json.
type ChatTemplateConfig struct {
	ChatTemplate json.RawMessage `json:"chat_template"`
	BOSToken     json.RawMessage `json:"bos_token"`
	EOSToken     json.RawMessage `json:"eos_token"`
}

// LoadChatTemplate reads the chat template from dir/tokenizer_config.json
// (a string, or a list of {name, template} where "default" or "tool_use" is used).
func LoadChatTemplate(dir string) (template string, vars map[string]string, err error) {
	path := filepath.Join(dir, "tokenizer_config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil, fmt.Errorf("read chat template: %w", err)
	}
	var cfg ChatTemplateConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(cfg.ChatTemplate) == 0 {
		return "", nil, fmt.Errorf("%s: field chat_template: missing (use format: plain, or a model with a chat template)", path)
	}
	if err := json.Unmarshal(cfg.ChatTemplate, &template); err != nil {
		var named []struct{ Name, Template string }
		if err2 := json.Unmarshal(cfg.ChatTemplate, &named); err2 != nil {
			return "", nil, fmt.Errorf("%s: field chat_template: neither a string nor a list of {name, template}", path)
		}
		for _, want := range []string{"tool_use", "default"} {
			for _, n := range named {
				if n.Name == want && template == "" {
					template = n.Template
				}
			}
		}
		if template == "" && len(named) > 0 {
			template = named[0].Template
		}
	}
	vars = map[string]string{"bos_token": tokenText(cfg.BOSToken), "eos_token": tokenText(cfg.EOSToken)}
	return template, vars, nil
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

// NewChatFormat compiles template and derives the tool-turn markup from it.
// toolSpecs is the OpenAI-format tool list given to the template as `tools`.
func NewChatFormat(template string, vars map[string]string, enc Encoder, system string, toolSpecs json.RawMessage) (Format, error) {
	tmpl, err := jinja.Compile(template)
	if err != nil {
		return nil, fmt.Errorf("compile chat template: %w", err)
	}
	f := &chatFormat{tmpl: tmpl, enc: enc, system: system, toolsJSON: toolSpecs, vars: map[string]jinja.Value{}}
	for k, v := range vars {
		f.vars[k] = jinja.NewString(v)
	}
	if err := f.deriveToolTurn(); err != nil {
		if len(toolSpecs) > 0 {
			return nil, err
		}
		// No tools configured: a template without tool turns is fine until
		// the policy writes a call anyway; then Injection reports why.
		f.noToolTurn = err
		return f, nil
	}
	if f.beforeIDs, err = enc.Encode(f.before, false); err != nil {
		return nil, fmt.Errorf("tokenize tool-turn markup %q: %w", f.before, err)
	}
	if f.afterIDs, err = enc.Encode(f.after, false); err != nil {
		return nil, fmt.Errorf("tokenize tool-turn markup %q: %w", f.after, err)
	}
	return f, nil
}

func (f *chatFormat) Name() string     { return "chat" }
func (f *chatFormat) CallForm() string { return tools.FormHermes }

// TurnCalls is false until the runner answers whole turns (#25): the chat
// format still pauses at each </tool_call>.
func (f *chatFormat) TurnCalls() bool { return false }

// Render renders a conversation (messages as OpenAI-shaped JSON) with the
// template, with tools and add_generation_prompt.
func (f *chatFormat) Render(messagesJSON []byte, addGenerationPrompt bool) (string, error) {
	msgs, err := jinjaValue(messagesJSON)
	if err != nil {
		return "", err
	}
	data := map[string]jinja.Value{"messages": msgs, "add_generation_prompt": jinja.NewBool(addGenerationPrompt)}
	if len(f.toolsJSON) > 0 {
		toolsVal, err := jinjaValue(f.toolsJSON)
		if err != nil {
			return "", err
		}
		data["tools"] = toolsVal
	}
	for k, v := range f.vars {
		data[k] = v
	}
	out, err := f.tmpl.RenderValues(data)
	if err != nil {
		return "", fmt.Errorf("render chat template: %w", err)
	}
	return out, nil
}

// deriveToolTurn renders [user] and [user, assistant(call), tool(result)] and
// reads the markup between the end of the call and the result, and after the
// result, from the difference.
func (f *chatFormat) deriveToolTurn() error {
	user := []map[string]any{{"role": "user", "content": probeUser}}
	base, _ := json.Marshal(user)
	prompt, err := f.Render(base, true)
	if err != nil {
		return err
	}
	withTool := append(user,
		map[string]any{"role": "assistant", "content": "", "tool_calls": []any{
			map[string]any{"type": "function", "function": map[string]any{"name": probeCall, "arguments": map[string]any{}}},
		}},
		map[string]any{"role": "tool", "name": probeCall, "content": probeResult},
	)
	full, _ := json.Marshal(withTool)
	conv, err := f.Render(full, true)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(conv, prompt) {
		return errors.New("chat template: the rendering of a conversation does not start with the rendering of its first turn; cannot derive the tool-turn markup")
	}
	rest := conv[len(prompt):]
	callEnd := strings.LastIndex(rest[:max(strings.Index(rest, probeResult), 0)], "</tool_call>")
	resultAt := strings.Index(rest, probeResult)
	if callEnd < 0 || resultAt < 0 {
		return errors.New("chat template: renders no <tool_call>...</tool_call> or no tool result; it does not support the Hermes tool-call form")
	}
	f.before = rest[callEnd+len("</tool_call>") : resultAt]
	f.after = rest[resultAt+len(probeResult):]
	return nil
}

func (f *chatFormat) PromptTokens(p *Prompt) ([]int32, error) {
	msgs := p.Messages
	if len(msgs) == 0 {
		msgs = []Message{{Role: "user", Content: p.Prompt}}
	}
	if f.system != "" && msgs[0].Role != "system" {
		msgs = append([]Message{{Role: "system", Content: f.system}}, msgs...)
	}
	data, _ := json.Marshal(msgs)
	text, err := f.Render(data, true)
	if err != nil {
		return nil, fmt.Errorf("prompt %q: %w", p.ID, err)
	}
	// The template writes its own BOS/markup; the post-processor must not add more.
	ids, err := f.enc.Encode(text, false)
	if err != nil {
		return nil, fmt.Errorf("tokenize prompt %q: %w", p.ID, err)
	}
	return ids, nil
}

func (f *chatFormat) Injection(results []traj.ToolResult) (ToolTurn, error) {
	if f.noToolTurn != nil {
		return ToolTurn{}, fmt.Errorf("the policy wrote a tool call but %w", f.noToolTurn)
	}
	r, err := singleResult(results)
	if err != nil {
		return ToolTurn{}, err
	}
	content, err := f.enc.Encode(r.Content, false)
	if err != nil {
		return ToolTurn{}, fmt.Errorf("tokenize tool result: %w", err)
	}
	ids := make([]int32, 0, len(f.beforeIDs)+len(content)+len(f.afterIDs))
	ids = append(append(append(ids, f.beforeIDs...), content...), f.afterIDs...)
	return ToolTurn{Text: f.before + r.Content + f.after, IDs: ids, Ends: []int{len(ids)}}, nil
}
