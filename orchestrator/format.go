package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolrl/toolrl/chat"
	"github.com/toolrl/toolrl/prompt"
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
	// CallForm is the tool-call syntax the policy writes: tools.FormBracket,
	// FormHermes, FormLlama3JSON or FormMistral.
	CallForm() string
	// TurnCalls reports how calls are answered. False (plain formats): the
	// sequence pauses as soon as a call closes and that one result is
	// injected. True (chat formats): the model goes on sampling after a call
	// until it ends its turn with its own end-of-turn token (sampled, loss
	// mask 1), and all of the turn's calls are answered together in one
	// injected tool turn.
	TurnCalls() bool
	// PromptTokens renders and tokenizes a prompt.
	PromptTokens(p *prompt.Prompt) ([]int32, error)
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

// CallLimiter is a Format whose template renders at most MaxCallsPerTurn
// calls in one assistant turn (vLLM's Llama-3.1 JSON template raises for a
// second one): the runner runs no more than that per turn.
type CallLimiter interface {
	// MaxCallsPerTurn is the limit, 0 for none.
	MaxCallsPerTurn() int
}

// MaxCallsPerTurn is f's per-turn call limit from its template, 0 for none.
func MaxCallsPerTurn(f Format) int {
	if l, ok := f.(CallLimiter); ok {
		return l.MaxCallsPerTurn()
	}
	return 0
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

func (f *plainFormat) PromptTokens(p *prompt.Prompt) ([]int32, error) {
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

// FormatOptions are the job settings a model folder's Format depends on.
type FormatOptions struct {
	// Format is the job's format: "" (the folder decides: plain when it
	// ships prompt_format.json, else chat), "plain" or "chat".
	Format string
	// ToolCallFormat is the job's tool_call_format: "" (the folder
	// decides); in the plain format it replaces prompt_format.json's, in
	// the chat format it must be what the template renders.
	ToolCallFormat string
	// System is the job's system prompt (chat format).
	System string
	// Kwargs are the job's chat_template_kwargs (chat format only).
	Kwargs chat.Kwargs
	// Tools are the tools the policy may call (none: a chat template
	// without tool turns is accepted).
	Tools []tools.Spec
}

// OpenFormat returns the Format a rollout of the model folder uses, and so
// its call form (Format.CallForm): the folder's prompt_format.json, else its
// chat template (whose renderings decide the call form). enc tokenizes the
// format's pieces (the folder's tokenizer).
func OpenFormat(model string, enc Encoder, opts FormatOptions) (Format, error) {
	if opts.Format != "chat" {
		pf, ok, err := LoadPromptFormat(model)
		if err != nil {
			return nil, err
		}
		if ok {
			if len(opts.Kwargs) > 0 {
				return nil, fmt.Errorf("chat_template_kwargs: set, but %s renders prompts in the plain format; remove them or set format: chat", filepath.Join(model, "prompt_format.json"))
			}
			if opts.ToolCallFormat != "" {
				pf.ToolCallFormat = opts.ToolCallFormat
			}
			return NewPlainFormat(pf, enc), nil
		}
		if opts.Format == "plain" {
			return nil, fmt.Errorf("format: plain needs %s", filepath.Join(model, "prompt_format.json"))
		}
	}
	withTools := len(opts.Tools) > 0
	tmpl, err := chat.Load(model, withTools)
	if err != nil {
		return nil, fmt.Errorf("format: %w", err)
	}
	var specs json.RawMessage
	if withTools {
		if specs, err = json.Marshal(opts.Tools); err != nil {
			return nil, err
		}
	}
	f, err := NewChatFormat(tmpl, enc, ChatOptions{System: opts.System, Tools: specs, Kwargs: opts.Kwargs})
	if err != nil {
		return nil, err
	}
	// The chat template decides the call form; a job naming another one
	// would parse calls the template never renders.
	if withTools && opts.ToolCallFormat != "" && opts.ToolCallFormat != f.CallForm() {
		return nil, fmt.Errorf("tool_call_format: %s, but the chat template (%s) renders %s calls; remove the key (in chat format the template decides)", opts.ToolCallFormat, tmpl.Where, f.CallForm())
	}
	return f, nil
}
