package orchestrator

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
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

func chatCases() []map[string]any {
	var toolsList any
	json.Unmarshal([]byte(qwenTools), &toolsList)
	call := func(name, args string) map[string]any {
		var a any
		json.Unmarshal([]byte(args), &a)
		return map[string]any{"type": "function", "function": map[string]any{"name": name, "arguments": a}}
	}
	return []map[string]any{
		{"messages": []any{map[string]any{"role": "user", "content": "What is 12 * 34?"}}, "tools": toolsList, "add_generation_prompt": true},
		{"messages": []any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "Hi ünïcødé 你好 🎉"}}, "add_generation_prompt": true},
		{"messages": []any{
			map[string]any{"role": "user", "content": "Compute (3+4)*5 then search."},
			map[string]any{"role": "assistant", "content": "", "tool_calls": []any{call("calculator", `{"expression": "(3+4)*5"}`)}},
			map[string]any{"role": "tool", "name": "calculator", "content": "35"},
			map[string]any{"role": "assistant", "content": "Now searching.", "tool_calls": []any{call("search", `{"query": "thirty five", "k": 3}`), call("calculator", `{"expression": "35/7"}`)}},
			map[string]any{"role": "tool", "name": "search", "content": "doc: 35 is five sevens"},
			map[string]any{"role": "tool", "name": "calculator", "content": "5"},
			map[string]any{"role": "assistant", "content": "The answer is 35."},
		}, "tools": toolsList, "add_generation_prompt": false},
	}
}

// TestChatTemplateMatchesHuggingFaceJinja renders Qwen2.5's tool-calling
// template with our Go engine and with @huggingface/jinja (the engine of
// transformers.js) and requires identical text.
func TestChatTemplateMatchesHuggingFaceJinja(t *testing.T) {
	root := testsupport.RepoRoot(t)
	script := filepath.Join(root, "scripts", "orchestrator")
	_, node := testsupport.NodePackage(t, "@huggingface/jinja")
	tmplText, err := os.ReadFile("testdata/qwen2.5-tool-template.jinja")
	if err != nil {
		t.Fatal(err)
	}
	cases := chatCases()
	input, _ := json.Marshal(map[string]any{"template": string(tmplText), "cases": cases})
	cmd := exec.Command(node, filepath.Join(script, "render.mjs"))
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node render.mjs: %v\n%s", err, stderr.String())
	}
	var want []string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		toolsJSON, _ := json.Marshal(c["tools"])
		if c["tools"] == nil {
			toolsJSON = nil
		}
		f, err := NewChatFormat(string(tmplText), nil, byteEncoder{}, "", toolsJSON)
		if err != nil {
			t.Fatal(err)
		}
		msgs, _ := json.Marshal(c["messages"])
		got, err := f.(*chatFormat).Render(msgs, c["add_generation_prompt"].(bool))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got != want[i] {
			t.Errorf("case %d differs from @huggingface/jinja:\n go: %q\n js: %q", i, got, want[i])
		}
	}
}

func TestChatFormatDerivesToolTurnMarkup(t *testing.T) {
	tmplText, err := os.ReadFile("testdata/qwen2.5-tool-template.jinja")
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewChatFormat(string(tmplText), nil, byteEncoder{}, "", json.RawMessage(qwenTools))
	if err != nil {
		t.Fatal(err)
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
}

func TestChatTemplateWithoutToolSupportIsAnError(t *testing.T) {
	plain := `{% for m in messages %}{{ m.role }}: {{ m.content }}
{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}`
	if _, err := NewChatFormat(plain, nil, byteEncoder{}, "", json.RawMessage(qwenTools)); err == nil || !strings.Contains(err.Error(), "Hermes") {
		t.Fatalf("a template without tool turns: err = %v, want one naming the Hermes form", err)
	}
}
