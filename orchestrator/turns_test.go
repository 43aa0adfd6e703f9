package orchestrator

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolrl/toolrl/chat"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/reward"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/tokenizer"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// intervalTools is a registry of tools that each sleep, record when they
// ran, and answer with their name and arguments: concurrency is measured,
// not assumed.
type intervalTools struct {
	mu    sync.Mutex
	spans map[string][2]time.Time
}

func (it *intervalTools) registry(t *testing.T, names ...string) *tools.Registry {
	t.Helper()
	reg := tools.NewRegistry()
	for _, name := range names {
		err := reg.Register(&tools.Func{ToolName: name, ToolDescription: "Sleeps 200 ms, then echoes its arguments.",
			ToolSchema: json.RawMessage(`{"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}`),
			Fn: func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
				start := time.Now()
				select {
				case <-time.After(200 * time.Millisecond):
				case <-ctx.Done():
					return tools.Result{}, ctx.Err()
				}
				it.mu.Lock()
				it.spans[name] = [2]time.Time{start, time.Now()}
				it.mu.Unlock()
				return tools.Result{Content: name + " got " + string(args)}, nil
			}}, tools.Settings{})
		if err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// qwenChatModel writes the tiny random model with Qwen2.5's chat template
// (chat/testdata) as its chat_template.jinja.
func qwenChatModel(t *testing.T) (dir string, tmpl *chat.Template, tok *tokenizer.Tokenizer) {
	t.Helper()
	testsupport.RequireORT(t)
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	w, _ := llama.RandomWeights(cfg, 9)
	dir = filepath.Join(t.TempDir(), "chat")
	if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w}); err != nil {
		t.Fatal(err)
	}
	qwen, err := os.ReadFile(filepath.Join("..", "chat", "testdata", "qwen2.5", "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tc map[string]any
	if err := json.Unmarshal(qwen, &tc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, chat.TemplateFile), []byte(tc["chat_template"].(string)), 0o644); err != nil {
		t.Fatal(err)
	}
	if tmpl, err = chat.Load(dir, true); err != nil {
		t.Fatal(err)
	}
	if tok, err = tokenizer.Load(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	return dir, tmpl, tok
}

// TestParallelCallsInOneTurn: a policy (the tiny model under a forced-token
// sampler) writes two calls and a malformed one in one assistant turn and
// ends the turn with <|im_end|>; the runner runs the calls concurrently,
// injects one tool turn, and the trajectory is the conversation the chat
// template renders, token for token.
// It runs in lockstep and with async_tools (results injected as they come
// back), which share the turn's execution and injection.
func TestParallelCallsInOneTurn(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(map[bool]string{false: "lockstep", true: "async_tools"}[async], func(t *testing.T) { parallelCallsInOneTurn(t, async) })
	}
}

func parallelCallsInOneTurn(t *testing.T, async bool) {
	dir, tmpl, tok := qwenChatModel(t)
	it := &intervalTools{spans: map[string][2]time.Time{}}
	reg := it.registry(t, "alpha", "beta")
	specs, _ := json.Marshal(reg.Specs())

	user := `[{"role": "user", "content": "Ask both tools."}]`
	render := func(msgs string, gen bool) string {
		t.Helper()
		s, err := tmpl.Render(chat.Request{Messages: json.RawMessage(msgs), Tools: specs, AddGenerationPrompt: gen})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	calls := `[{"type": "function", "function": {"name": "alpha", "arguments": {"x": 1}}}, {"type": "function", "function": {"name": "beta", "arguments": {"x": 2}}}]`
	assistant := `{"role": "assistant", "content": "Both.", "tool_calls": ` + calls + `}`
	prompt := render(user, true)
	withCalls := render(`[{"role": "user", "content": "Ask both tools."}, `+assistant+`]`, false)
	if !strings.HasPrefix(withCalls, prompt) || !strings.HasSuffix(withCalls, "<|im_end|>\n") {
		t.Fatalf("template renders the calling turn as %q", withCalls)
	}
	// The model writes the turn as the template renders it, a malformed
	// call after the two (it fails alone), and samples <|im_end|>.
	turn1 := strings.TrimSuffix(withCalls[len(prompt):], "<|im_end|>\n")
	const bad = "\n<tool_call>\n{\"name\": \"alpha\", \"arguments\": {\"x\": }\n</tool_call>"
	final := "Done: 1 and 2."
	encode := func(s string) []int32 {
		ids, err := tok.Encode(s, false)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	forced := slices.Concat(encode(turn1+bad), []int32{llama.ByteImEnd}, encode(final), []int32{llama.ByteImEnd})

	prompts := filepath.Join(t.TempDir(), "p.jsonl")
	os.WriteFile(prompts, []byte(`{"id":"m","messages":`+user+`,"answer":"2"}`+"\n"), 0o644)
	out := filepath.Join(t.TempDir(), "o.jsonl")
	job := tinyJob(dir, prompts, out)
	job.Format, job.GroupSize, job.RefModel, job.AsyncTools = setting.Of("chat"), setting.Of(1), setting.Of(dir), setting.Of(async)
	job.Sampling.MaxNewTokens = setting.Of(600)
	job.Limits.MaxTokens = setting.Of(1000)
	sum, err := quietRun(t, context.Background(), job, RunOptions{Hooks: Hooks{Tools: reg, Forced: func(int) []int32 { return forced }}})
	if err != nil {
		t.Fatal(err)
	}
	ts := readTrajectories(t, out)
	if len(ts) != 1 {
		t.Fatalf("%d trajectories", len(ts))
	}
	tr := ts[0]

	// Concurrency, measured: the two 200 ms calls overlap.
	a, b := it.spans["alpha"], it.spans["beta"]
	if a[0].IsZero() || b[0].IsZero() {
		t.Fatalf("tools ran: %v", it.spans)
	}
	end, start := a[1], a[0]
	if b[1].Before(end) {
		end = b[1]
	}
	if b[0].After(start) {
		start = b[0]
	}
	overlap := end.Sub(start)
	t.Logf("alpha %v..%v, beta %v..%v: overlap %v", a[0].Format("05.000"), a[1].Format("05.000"), b[0].Format("05.000"), b[1].Format("05.000"), overlap)
	if overlap < 100*time.Millisecond {
		t.Errorf("the turn's calls overlapped %v, want them concurrent (≥ 100 ms of 200)", overlap)
	}

	// Segments: three model pieces of turn 0 (one per call), three tool
	// pieces answering them, then turn 1.
	var kinds []string
	for _, s := range tr.Segments {
		kinds = append(kinds, string(s.Kind)+"/"+string(rune('0'+s.Turn)))
	}
	if got := strings.Join(kinds, " "); got != "model/0 model/0 model/0 tool/0 tool/0 tool/0 model/1" {
		t.Fatalf("segments %s", got)
	}
	names := []string{"alpha", "beta", "alpha"}
	for i := 0; i < 3; i++ {
		m, r := tr.Segments[i], tr.Segments[3+i]
		if m.Call == nil || m.Call.Name != names[i] || r.Result == nil || r.Call == nil || !m.Call.Equal(r.Call) {
			t.Errorf("call %d: model %+v, tool %+v", i, m.Call, r.Call)
		}
	}
	if tr.Segments[0].Call.ParseError != "" || tr.Segments[1].Call.ParseError != "" || !tr.Segments[3].Result.OK || !tr.Segments[4].Result.OK {
		t.Errorf("the valid calls failed: %+v %+v", tr.Segments[3].Result, tr.Segments[4].Result)
	}
	if tr.Segments[2].Call.ParseError == "" || tr.Segments[5].Result.OK {
		t.Errorf("the malformed call did not fail alone: %+v, %+v", tr.Segments[2].Call, tr.Segments[5].Result)
	}
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}

	// <|im_end|> closes turn 0 as a sampled token with the model's logprob
	// (equal to teacher-forced scoring), and every injected token has mask 0.
	endAt := tr.Segments[2].End - 1
	if tr.Tokens[tr.PromptLen+endAt] != llama.ByteImEnd || tr.LossMask[endAt] != 1 {
		t.Errorf("turn 0 ends with token %d (mask %d), want a sampled <|im_end|>", tr.Tokens[tr.PromptLen+endAt], tr.LossMask[endAt])
	}
	var worst float64
	for j, m := range tr.LossMask {
		if m == 1 {
			worst = max(worst, math.Abs(float64(tr.Logprobs[j]-tr.RefLogprobs[j])))
		}
	}
	if worst > 1e-4 || tr.Logprobs[endAt] >= 0 {
		t.Errorf("sampled logprobs vs teacher-forced: max |Δ| %g (end-of-turn logprob %g)", worst, tr.Logprobs[endAt])
	}
	for _, s := range tr.Segments[3:6] {
		for j := s.Start; j < s.End; j++ {
			if tr.LossMask[j] != 0 {
				t.Fatalf("injected token %d has mask 1", j)
			}
		}
	}

	// The trajectory is the rendered conversation, token for token.
	results := []string{"alpha got {\"x\":1}", "beta got {\"x\":2}", tr.Segments[5].Result.Content}
	conv := `[{"role": "user", "content": "Ask both tools."}, ` + assistant
	for _, r := range results {
		rj, _ := json.Marshal(r)
		conv += `, {"role": "tool", "content": ` + string(rj) + `}`
	}
	// The malformed call is part of the assistant's text; its rendering
	// as written is what the template shows for content plus calls, so
	// compare the text before it and from the tool turn on.
	full := render(conv+`, {"role": "assistant", "content": `+jsonString(final)+`}]`, false)
	at := strings.LastIndex(full, "</tool_call><|im_end|>") + len("</tool_call>")
	wantIDs := encode(strings.TrimSuffix(full[:at]+bad+full[at:], "\n"))
	equalRendering(t, tok, tr.Tokens, wantIDs)
	if sum.MaxCallsPerTurn != 3 || sum.TurnsWithCall != 1 {
		t.Errorf("summary: %d calling turns, up to %d calls per turn; want 1 and 3", sum.TurnsWithCall, sum.MaxCallsPerTurn)
	}
}

// equalRendering fails the test when a trajectory's tokens are not the
// rendered conversation's, showing both from the first difference.
func equalRendering(t *testing.T, tok *tokenizer.Tokenizer, got, want []int32) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	k := 0
	for k < min(len(got), len(want)) && got[k] == want[k] {
		k++
	}
	g, _ := tok.Decode(got[k:], false)
	w, _ := tok.Decode(want[k:], false)
	t.Errorf("trajectory tokens differ from the rendered conversation from token %d:\n got %q\nwant %q", k, g, w)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestPerTurnCallCap: with max_tool_calls_per_turn 2, a turn's third call
// is not run and fails as over_cap; the first two run and the trajectory
// goes on.
func TestPerTurnCallCap(t *testing.T) {
	dir, _, tok := qwenChatModel(t)
	it := &intervalTools{spans: map[string][2]time.Time{}}
	reg := it.registry(t, "alpha", "beta", "gamma")
	call := func(name string) string {
		return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": {\"x\": 1}}\n</tool_call>\n"
	}
	ids, err := tok.Encode(call("alpha")+call("beta")+call("gamma"), false)
	if err != nil {
		t.Fatal(err)
	}
	fin, _ := tok.Encode("ok", false)
	forced := slices.Concat(ids, []int32{llama.ByteImEnd}, fin, []int32{llama.ByteImEnd})
	prompts := filepath.Join(t.TempDir(), "p.jsonl")
	os.WriteFile(prompts, []byte(`{"id":"m","prompt":"go","answer":"x"}`+"\n"), 0o644)
	out := filepath.Join(t.TempDir(), "o.jsonl")
	job := tinyJob(dir, prompts, out)
	job.Format, job.GroupSize = setting.Of("chat"), setting.Of(1)
	job.Sampling.MaxNewTokens = setting.Of(600)
	job.Limits.MaxTokens, job.Limits.MaxToolCallsPerTurn = setting.Of(1000), setting.Of(2)
	if _, err := quietRun(t, context.Background(), job, RunOptions{Hooks: Hooks{Tools: reg, Forced: func(int) []int32 { return forced }}}); err != nil {
		t.Fatal(err)
	}
	tr := readTrajectories(t, out)[0]
	if _, ran := it.spans["gamma"]; ran || len(it.spans) != 2 {
		t.Errorf("tools that ran: %v, want alpha and beta only", it.spans)
	}
	var classes []string
	for _, s := range tr.Segments {
		if s.Kind == traj.SegmentTool {
			classes = append(classes, s.Result.ErrorClass)
		}
	}
	if got := strings.Join(classes, ","); got != ",,over_cap" || tr.FinishReason != traj.FinishStop {
		t.Errorf("tool results' classes %q, finish %s; want \",,over_cap\" and stop", got, tr.FinishReason)
	}
	if tr.Reward.Parts[reward.PartOverCap] >= 0 {
		t.Errorf("no over_cap penalty: %+v", tr.Reward.Parts)
	}
}

// llama3Model writes the tiny random model with Llama-3's turn tokens added
// to its byte tokenizer and vLLM's Llama-3.1 JSON tool template
// (chat/testdata/llama3.1-json), <|eot_id|> its eos.
func llama3Model(t *testing.T) (dir string, tmpl *chat.Template, tok *tokenizer.Tokenizer, eot int32) {
	t.Helper()
	testsupport.RequireORT(t)
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	var tj map[string]any
	if err := json.Unmarshal(llama.ByteTokenizerJSON(), &tj); err != nil {
		t.Fatal(err)
	}
	added := tj["added_tokens"].([]any)
	names := []string{"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"}
	for i, n := range names {
		added = append(added, map[string]any{"content": n, "id": llama.ByteVocabSize + i, "lstrip": false, "normalized": false, "rstrip": false, "single_word": false, "special": true})
	}
	tj["added_tokens"] = added
	tokJSON, _ := json.Marshal(tj)
	eot = int32(llama.ByteVocabSize + 3)
	cfg.BOSTokenID, cfg.EOSTokenID = llama.TokenIDs{llama.ByteVocabSize}, llama.TokenIDs{int(eot), int(eot) + 1}
	w, _ := llama.RandomWeights(cfg, 9)
	src := filepath.Join("..", "chat", "testdata", "llama3.1-json")
	tc, err := os.ReadFile(filepath.Join(src, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	jinja, err := os.ReadFile(filepath.Join(src, chat.TemplateFile))
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "llama3")
	if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w, TokenizerJSON: tokJSON, TokenizerConfig: tc,
		ExtraFiles: map[string][]byte{chat.TemplateFile: jinja}}); err != nil {
		t.Fatal(err)
	}
	if tmpl, err = chat.Load(dir, true); err != nil {
		t.Fatal(err)
	}
	if tok, err = tokenizer.Load(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	return dir, tmpl, tok, eot
}

// TestLlama3JSONToolTurn: with Llama-3.1's JSON tool template the call form
// comes from the template, the call is the whole assistant turn ended by a
// sampled <|eot_id|>, its result is injected in the ipython role, and the
// trajectory is the template's rendering of the conversation.
func TestLlama3JSONToolTurn(t *testing.T) {
	dir, tmpl, tok, eot := llama3Model(t)
	it := &intervalTools{spans: map[string][2]time.Time{}}
	reg := it.registry(t, "alpha")
	specs, _ := json.Marshal(reg.Specs())
	kwargs, err := chat.ParseKwargs(`{"date_string": "02 Dec 2026"}`)
	if err != nil {
		t.Fatal(err)
	}
	encode := func(s string) []int32 {
		ids, err := tok.Encode(s, false)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	call := `{"name": "alpha", "parameters": {"x": 1}}`
	final := "It is 1."
	forced := slices.Concat(encode(call), []int32{eot}, encode(final), []int32{eot})
	user := `[{"role": "user", "content": "Ask alpha."}]`
	prompts := filepath.Join(t.TempDir(), "p.jsonl")
	os.WriteFile(prompts, []byte(`{"id":"m","messages":`+user+`,"answer":"1"}`+"\n"), 0o644)
	out := filepath.Join(t.TempDir(), "o.jsonl")
	job := tinyJob(dir, prompts, out)
	job.Format, job.GroupSize, job.ChatTemplateKwargs = setting.Of("chat"), setting.Of(1), kwargs
	job.Sampling.MaxNewTokens = setting.Of(200)
	job.Limits.MaxTokens = setting.Of(1000)
	if _, err := quietRun(t, context.Background(), job, RunOptions{Hooks: Hooks{Tools: reg, Forced: func(int) []int32 { return forced }}}); err != nil {
		t.Fatal(err)
	}
	tr := readTrajectories(t, out)[0]
	if len(it.spans) != 1 || len(tr.Segments) != 3 || tr.Segments[0].Call == nil || tr.Segments[0].Call.Name != "alpha" || tr.Segments[1].Result == nil || !tr.Segments[1].Result.OK {
		t.Fatalf("segments %+v (tools ran %v)", tr.Segments, it.spans)
	}
	if end := tr.Segments[0].End - 1; tr.Tokens[tr.PromptLen+end] != eot || tr.LossMask[end] != 1 {
		t.Errorf("the calling turn does not end with a sampled <|eot_id|>")
	}
	res := jsonString(tr.Segments[1].Result.Content)
	conv := `[{"role": "user", "content": "Ask alpha."}, {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "alpha", "arguments": {"x": 1}}}]}, {"role": "tool", "content": ` + res + `}, {"role": "assistant", "content": ` + jsonString(final) + `}]`
	full, err := tmpl.Render(chat.Request{Messages: json.RawMessage(conv), Tools: specs, Kwargs: kwargs})
	if err != nil {
		t.Fatal(err)
	}
	equalRendering(t, tok, tr.Tokens, encode(full))
}
