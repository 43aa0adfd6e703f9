package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolrl/toolrl/chat"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// chatTurnCalls is chatFormat's TurnCalls: the runner answers a chat
// model's calls per assistant turn (#25).
const chatTurnCalls = true

// ChatOptions configure a chat format.
type ChatOptions struct {
	// System is prepended as a system message when a prompt has none.
	System string
	// Tools is the OpenAI-format tool list given to the template as `tools`
	// (nil: no tools).
	Tools json.RawMessage
	// Kwargs are the job's chat_template_kwargs.
	Kwargs chat.Kwargs
	// TurnCalls overrides chatTurnCalls (tests of the turn mode).
	TurnCalls *bool
}

// chatFormat renders the model's own chat template. The call form, the
// token that ends an assistant turn and the per-turn call limit are read
// from the template by rendering probe conversations, never guessed from
// text the model writes. The injected tool turn is what the template
// renders after the calling assistant turn's end-of-turn token for the
// actual results, so a trajectory's tokens equal the tokenization of the
// rendered conversation.
type chatFormat struct {
	tmpl      *chat.Template
	enc       Encoder
	opts      ChatOptions
	turnCalls bool
	form      string
	// maxCalls is the template's per-turn call limit, 0 for none.
	maxCalls int
	// before and after wrap a result's content in the pause-at-close mode
	// (TurnCalls false, Hermes only): the text between </tool_call> and the
	// result, and after it.
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

// endOfTurnTokens are the end-of-turn tokens of the families toolrl knows,
// tried besides the template's eos_token: the assistant's turn ends at the
// first of them after its last call.
var endOfTurnTokens = []string{"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "</s>", "<|end|>", "<end_of_turn>"}

// NewChatFormat derives the tool-call form and tool turns of tmpl. With
// tools configured, a template that renders no tool calls, or renders them
// in a form toolrl does not parse, is an error.
func NewChatFormat(tmpl *chat.Template, enc Encoder, opts ChatOptions) (Format, error) {
	f := &chatFormat{tmpl: tmpl, enc: enc, opts: opts, turnCalls: chatTurnCalls}
	if opts.TurnCalls != nil {
		f.turnCalls = *opts.TurnCalls
	}
	// Render a prompt once now, so a template that cannot render a plain
	// conversation fails at start, naming its file.
	if _, err := f.render(f.withSystem([]prompt.Message{{Role: "user", Content: probeUser}}), true); err != nil {
		return nil, err
	}
	if err := f.deriveForm(); err != nil {
		if len(opts.Tools) > 0 {
			return nil, err
		}
		// No tools configured: a template without tool turns is fine until
		// the policy writes a call anyway (read as Hermes); then Injection
		// reports why.
		f.noToolTurn, f.form = err, tools.FormHermes
		return f, nil
	}
	return f, nil
}

func (f *chatFormat) Name() string     { return "chat" }
func (f *chatFormat) CallForm() string { return f.form }
func (f *chatFormat) TurnCalls() bool  { return f.turnCalls }

// MaxCallsPerTurn is 1 for a template that refuses two calls in one
// assistant turn (Llama-3.1's JSON template), else 0 (no limit).
func (f *chatFormat) MaxCallsPerTurn() int { return f.maxCalls }

func (f *chatFormat) withSystem(msgs []prompt.Message) []any {
	out := make([]any, 0, len(msgs)+1)
	if f.opts.System != "" && (len(msgs) == 0 || msgs[0].Role != "system") {
		out = append(out, prompt.Message{Role: "system", Content: f.opts.System})
	}
	for _, m := range msgs {
		out = append(out, m)
	}
	return out
}

// render renders messages (values that marshal to OpenAI-style messages).
func (f *chatFormat) render(msgs []any, addGenerationPrompt bool) (string, error) {
	data, err := json.Marshal(msgs)
	if err != nil {
		return "", err
	}
	return f.tmpl.Render(chat.Request{Messages: data, Tools: f.opts.Tools, AddGenerationPrompt: addGenerationPrompt, Kwargs: f.opts.Kwargs})
}

// probeTurn is [system?, user, assistant with n probe calls, one tool
// message per result] (results nil: none).
func (f *chatFormat) probeTurn(n int, results []string) []any {
	calls := make([]any, n)
	for i := range calls {
		calls[i] = map[string]any{"type": "function", "id": fmt.Sprintf("toolrlprobe%d", i),
			"function": map[string]any{"name": probeCall, "arguments": map[string]any{}}}
	}
	msgs := f.withSystem([]prompt.Message{{Role: "user", Content: probeUser}})
	msgs = append(msgs, map[string]any{"role": "assistant", "content": "", "tool_calls": calls})
	for i, r := range results {
		msgs = append(msgs, map[string]any{"role": "tool", "name": probeCall, "tool_call_id": fmt.Sprintf("toolrlprobe%d", i), "content": r})
	}
	return msgs
}

// turnEnd returns, in a rendering of probeTurn(n, ...), where the assistant
// text starts (after the user turn) and where its end-of-turn token ends.
func (f *chatFormat) turnEnd(text string, n int) (start, end int, err error) {
	u := strings.Index(text, probeUser)
	if u < 0 {
		return 0, 0, fmt.Errorf("chat template (%s): the rendering does not contain the user message", f.tmpl.Where)
	}
	start = u + len(probeUser)
	p := start
	for range n {
		i := strings.Index(text[p:], probeCall)
		if i < 0 {
			return 0, 0, fmt.Errorf("chat template (%s): renders no tool calls (an assistant message's tool_calls do not appear in its rendering); it cannot be used with tools", f.tmpl.Where)
		}
		p += i + len(probeCall)
	}
	candidates := append([]string{f.tmpl.Special["eos_token"]}, endOfTurnTokens...)
	best, bestLen := -1, 0
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if i := strings.Index(text[p:], c); i >= 0 && (best < 0 || i < best) {
			best, bestLen = i, len(c)
		}
	}
	if best < 0 {
		return 0, 0, fmt.Errorf("chat template (%s): cannot find the end-of-turn token after an assistant's tool calls (tried eos_token %q and %s)", f.tmpl.Where, f.tmpl.Special["eos_token"], strings.Join(endOfTurnTokens, " "))
	}
	return start, p + best + bestLen, nil
}

// deriveForm reads the call form, the per-turn limit and the
// pause-at-close markup from probe renderings.
func (f *chatFormat) deriveForm() error {
	text, err := f.render(f.probeTurn(1, []string{probeResult}), true)
	if err != nil {
		return fmt.Errorf("chat template cannot render an assistant tool call and a tool message: %w", err)
	}
	start, end, err := f.turnEnd(text, 1)
	if err != nil {
		return err
	}
	call := text[start:end]
	switch {
	case strings.Contains(call, "<tool_call>"):
		f.form = tools.FormHermes
	case strings.Contains(call, "[TOOL_CALLS]"):
		f.form = tools.FormMistral
	case strings.Contains(call, `{"name": "`+probeCall+`", "parameters": `):
		f.form = tools.FormLlama3JSON
	default:
		return fmt.Errorf("chat template (%s): renders tool calls as %q, which is none of the forms toolrl parses (Hermes <tool_call>, Llama-3.1 JSON {\"name\", \"parameters\"}, Mistral [TOOL_CALLS])", f.tmpl.Where, call)
	}
	if _, err := f.render(f.probeTurn(2, []string{probeResult, probeResult}), true); err != nil {
		// The template refuses a second call in one turn (it raises).
		f.maxCalls = 1
	}
	if f.form != tools.FormHermes {
		return nil
	}
	// Pause-at-close mode: the markup between </tool_call> and the result
	// (the end-of-turn token included), and after the result.
	rest := text[start:]
	resultAt := strings.Index(rest, probeResult)
	callEnd := strings.LastIndex(rest[:max(resultAt, 0)], "</tool_call>")
	if callEnd < 0 || resultAt < 0 {
		return fmt.Errorf("chat template (%s): renders no tool result after </tool_call>", f.tmpl.Where)
	}
	f.before = rest[callEnd+len("</tool_call>") : resultAt]
	f.after = rest[resultAt+len(probeResult):]
	if f.beforeIDs, err = f.enc.Encode(f.before, false); err != nil {
		return fmt.Errorf("tokenize tool-turn markup %q: %w", f.before, err)
	}
	if f.afterIDs, err = f.enc.Encode(f.after, false); err != nil {
		return fmt.Errorf("tokenize tool-turn markup %q: %w", f.after, err)
	}
	return nil
}

func (f *chatFormat) PromptTokens(p *prompt.Prompt) ([]int32, error) {
	msgs := p.Messages
	if len(msgs) == 0 {
		msgs = []prompt.Message{{Role: "user", Content: p.Prompt}}
	}
	text, err := f.render(f.withSystem(msgs), true)
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
	if f.turnCalls {
		return f.turnInjection(results)
	}
	r, err := singleResult(results)
	if err != nil {
		return ToolTurn{}, err
	}
	if f.form != tools.FormHermes {
		return ToolTurn{}, fmt.Errorf("inject tool results: the %s call form is answered per turn, not at each call's close", f.form)
	}
	content, err := f.enc.Encode(r.Content, false)
	if err != nil {
		return ToolTurn{}, fmt.Errorf("tokenize tool result: %w", err)
	}
	ids := make([]int32, 0, len(f.beforeIDs)+len(content)+len(f.afterIDs))
	ids = append(append(append(ids, f.beforeIDs...), content...), f.afterIDs...)
	return ToolTurn{Text: f.before + r.Content + f.after, IDs: ids, Ends: []int{len(ids)}}, nil
}

// turnInjection is the tool turn after an assistant turn with one call per
// result, injected after the model's sampled end-of-turn token: exactly
// what the template renders from there to the next generation prompt, with
// the actual results (templates may transform content: Llama-3.1's writes
// {"output": content} with tojson). Call i's part ends where the rendering
// with only the first i+1 results departs from the whole one.
func (f *chatFormat) turnInjection(results []traj.ToolResult) (ToolTurn, error) {
	n := len(results)
	if n == 0 {
		return ToolTurn{}, errors.New("inject tool results: no results")
	}
	if f.form == tools.FormMistral {
		// Its results carry each call's id ([TOOL_RESULTS] {"content": …,
		// "call_id": …}), which a result does not hold yet.
		return ToolTurn{}, errors.New("inject tool results: the Mistral call form needs each call's id in its tool turn, which toolrl does not pass to the format yet")
	}
	if f.maxCalls > 0 && n > f.maxCalls {
		return ToolTurn{}, fmt.Errorf("inject tool results: the chat template (%s) renders at most %d call per assistant turn, got %d", f.tmpl.Where, f.maxCalls, n)
	}
	contents := make([]string, n)
	for i, r := range results {
		contents[i] = r.Content
	}
	whole, err := f.render(f.probeTurn(n, contents), true)
	if err != nil {
		return ToolTurn{}, fmt.Errorf("inject tool results: %w", err)
	}
	_, end, err := f.turnEnd(whole, n)
	if err != nil {
		return ToolTurn{}, err
	}
	text := whole[end:]
	ids, err := f.enc.Encode(text, false)
	if err != nil {
		return ToolTurn{}, fmt.Errorf("tokenize tool turn: %w", err)
	}
	ends := make([]int, n)
	for k := 1; k < n; k++ {
		part, err := f.render(f.probeTurn(n, contents[:k]), false)
		if err != nil {
			return ToolTurn{}, fmt.Errorf("inject tool results: %w", err)
		}
		cut := commonPrefix(part, whole) - end
		if cut < 0 {
			cut = 0
		}
		prefix, err := f.enc.Encode(text[:cut], false)
		if err != nil {
			return ToolTurn{}, fmt.Errorf("tokenize tool turn: %w", err)
		}
		// The prefix's tokens are the whole's unless a merge crosses the cut;
		// then the part ends where they still agree.
		m := 0
		for m < len(prefix) && m < len(ids) && prefix[m] == ids[m] {
			m++
		}
		ends[k-1] = max(m, ends[max(k-2, 0)])
	}
	ends[n-1] = len(ids)
	return ToolTurn{Text: text, IDs: ids, Ends: ends}, nil
}

// commonPrefix is the length in bytes of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}
