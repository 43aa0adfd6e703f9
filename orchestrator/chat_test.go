package orchestrator

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/chat"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// byteEncoder tokenizes text as its bytes: enough for tests of the format
// layer that do not depend on a vocabulary.
type byteEncoder struct{}

func (byteEncoder) Encode(text string, addSpecial bool) ([]int32, error) {
	ids := make([]int32, 0, len(text)+1)
	if addSpecial {
		ids = append(ids, 256)
	}
	for _, b := range []byte(text) {
		ids = append(ids, int32(b))
	}
	return ids, nil
}

const qwenTools = `[{"type": "function", "function": {"name": "calculator", "description": "Evaluate an arithmetic expression exactly.", "parameters": {"type": "object", "properties": {"expression": {"type": "string", "description": "e.g. 12 * (3 + 4)"}}, "required": ["expression"]}}}, {"type": "function", "function": {"name": "search", "description": "BM25 search", "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "k": {"type": "integer", "minimum": 1}}, "required": ["query"]}}}]`

// fixture loads a chat-template fixture folder of the chat package.
func fixture(t *testing.T, name string) *chat.Template {
	t.Helper()
	tmpl, err := chat.Load(filepath.Join("..", "chat", "testdata", name), true)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func turnMode(t *testing.T, name string, enc Encoder, kwargs string) *chatFormat {
	t.Helper()
	kw, err := chat.ParseKwargs(kwargs)
	if err != nil {
		t.Fatal(err)
	}
	on := true
	f, err := NewChatFormat(fixture(t, name), enc, ChatOptions{Tools: json.RawMessage(qwenTools), Kwargs: kw, TurnCalls: &on})
	if err != nil {
		t.Fatal(err)
	}
	return f.(*chatFormat)
}

// TestChatFormatReadsTheCallFormFromTheTemplate renders probe calls with
// each fixture template and checks the form chosen and the per-turn limit
// (vLLM's Llama-3.1 JSON template raises for a second call in a turn).
func TestChatFormatReadsTheCallFormFromTheTemplate(t *testing.T) {
	for _, c := range []struct {
		fixture, form string
		maxCalls      int
	}{
		{"qwen2.5", tools.FormHermes, 0},
		{"qwen3", tools.FormHermes, 0},
		{"llama3.1-json", tools.FormLlama3JSON, 1},
		{"llama3.2-json", tools.FormLlama3JSON, 1},
		{"mistral-parallel", tools.FormMistral, 0},
	} {
		f, err := NewChatFormat(fixture(t, c.fixture), byteEncoder{}, ChatOptions{Tools: json.RawMessage(qwenTools)})
		if err != nil {
			t.Fatalf("%s: %v", c.fixture, err)
		}
		if f.CallForm() != c.form || MaxCallsPerTurn(f) != c.maxCalls {
			t.Errorf("%s: form %s, max calls per turn %d; want %s, %d", c.fixture, f.CallForm(), MaxCallsPerTurn(f), c.form, c.maxCalls)
		}
	}
}

// TestChatTurnInjection checks the tool turn injected after the model's
// sampled end-of-turn token for N results, against the text each template
// renders, and that each result's span holds that result.
func TestChatTurnInjection(t *testing.T) {
	results := []traj.ToolResult{toolResult("408"), toolResult("doc: 35 is five sevens"), toolResult("5")}
	cases := []struct {
		fixture, kwargs string
		n               int
		want            string
	}{
		{"qwen2.5", "", 2, "\n<|im_start|>user\n<tool_response>\n408\n</tool_response>\n<tool_response>\ndoc: 35 is five sevens\n</tool_response><|im_end|>\n<|im_start|>assistant\n"},
		{"qwen2.5", "", 1, "\n<|im_start|>user\n<tool_response>\n408\n</tool_response><|im_end|>\n<|im_start|>assistant\n"},
		{"qwen3", "", 3, "\n<|im_start|>user\n<tool_response>\n408\n</tool_response>\n<tool_response>\ndoc: 35 is five sevens\n</tool_response>\n<tool_response>\n5\n</tool_response><|im_end|>\n<|im_start|>assistant\n"},
		{"qwen3", `{"enable_thinking": false}`, 2, "\n<|im_start|>user\n<tool_response>\n408\n</tool_response>\n<tool_response>\ndoc: 35 is five sevens\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		// The template writes {"output": content} with tojson.
		{"llama3.1-json", "", 1, "<|start_header_id|>ipython<|end_header_id|>\n\n{\"output\": \"408\"}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
	}
	for _, c := range cases {
		f := turnMode(t, c.fixture, byteEncoder{}, c.kwargs)
		turn, err := f.Injection(results[:c.n])
		if err != nil {
			t.Fatalf("%s: %v", c.fixture, err)
		}
		if turn.Text != c.want {
			t.Errorf("%s %s, %d results:\n got %q\nwant %q", c.fixture, c.kwargs, c.n, turn.Text, c.want)
			continue
		}
		if len(turn.Ends) != c.n || turn.Ends[c.n-1] != len(turn.IDs) {
			t.Fatalf("%s: ends %v for %d ids", c.fixture, turn.Ends, len(turn.IDs))
		}
		start := 0
		for i, end := range turn.Ends {
			part := turn.Text[start:end] // byteEncoder: one id per byte
			if !strings.Contains(part, results[i].Content) {
				t.Errorf("%s: part %d %q does not hold result %q", c.fixture, i, part, results[i].Content)
			}
			for j := range c.n {
				if j != i && strings.Contains(part, "\n"+results[j].Content+"\n") {
					t.Errorf("%s: part %d %q holds result %d too", c.fixture, i, part, j)
				}
			}
			start = end
		}
	}
	// Mistral's results carry call ids, which the format is not given.
	if _, err := turnMode(t, "mistral-parallel", byteEncoder{}, "").Injection(results[:1]); err == nil || !strings.Contains(err.Error(), "call's id") {
		t.Errorf("Mistral turn injection: err = %v, want a refusal naming the missing call ids", err)
	}
	// The Llama-3.1 JSON template renders one call per turn.
	if _, err := turnMode(t, "llama3.1-json", byteEncoder{}, "").Injection(results[:2]); err == nil || !strings.Contains(err.Error(), "at most 1 call") {
		t.Errorf("two results for Llama-3.1 JSON: err = %v, want the per-turn limit", err)
	}
}

// TestChatFormatPauseAtCloseMarkup is the pause-at-close mode (TurnCalls
// false), used until the runner answers whole turns: the markup between
// </tool_call> and the result includes the end-of-turn token.
func TestChatFormatPauseAtCloseMarkup(t *testing.T) {
	f, err := NewChatFormat(fixture(t, "qwen2.5"), byteEncoder{}, ChatOptions{Tools: json.RawMessage(qwenTools)})
	if err != nil {
		t.Fatal(err)
	}
	if f.TurnCalls() {
		t.Skip("the chat format answers whole turns")
	}
	cf := f.(*chatFormat)
	if cf.before != "<|im_end|>\n<|im_start|>user\n<tool_response>\n" {
		t.Errorf("before = %q", cf.before)
	}
	if cf.after != "\n</tool_response><|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("after = %q", cf.after)
	}
	turn, err := f.Injection([]traj.ToolResult{toolResult("408")})
	if err != nil || !strings.Contains(turn.Text, "<tool_response>\n408\n</tool_response>") || len(turn.IDs) != len(turn.Text) {
		t.Errorf("Injection = %q (%d ids), %v", turn.Text, len(turn.IDs), err)
	}
	if _, err := f.Injection([]traj.ToolResult{toolResult("1"), toolResult("2")}); err == nil {
		t.Error("two results in pause-at-close mode: no error")
	}
}

func TestChatTemplateWithoutToolSupportIsAnError(t *testing.T) {
	plain := `{% for m in messages %}{{ m.role }}: {{ m.content }}
{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}`
	tmpl, err := chat.New(plain, nil, "plain.jinja")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewChatFormat(tmpl, byteEncoder{}, ChatOptions{Tools: json.RawMessage(qwenTools)}); err == nil || !strings.Contains(err.Error(), "renders no tool calls") || !strings.Contains(err.Error(), "plain.jinja") {
		t.Fatalf("a template without tool turns: err = %v, want one naming the file and saying it renders no tool calls", err)
	}
	// Without tools it is fine until the policy writes a call.
	f, err := NewChatFormat(tmpl, byteEncoder{}, ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Injection([]traj.ToolResult{toolResult("1")}); err == nil {
		t.Error("Injection with a template without tool turns: no error")
	}
}
