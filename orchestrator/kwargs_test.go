package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/chat"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/setting"
)

// TestChatTemplateKwargsAreASetting: a job file's chat_template_kwargs
// decode in the order written (a non-mapping is refused naming the file),
// are recorded with the output, and a resume with other kwargs is refused
// naming the key; a plain-format job refuses them.
func TestChatTemplateKwargsAreASetting(t *testing.T) {
	dir := t.TempDir()
	jobFile := filepath.Join(dir, "job.yaml")
	os.WriteFile(jobFile, []byte("model: m\nprompts: p.jsonl\nchat_template_kwargs: {enable_thinking: false, date_string: 26 Jul 2024}\n"), 0o644)
	job, err := LoadJob(jobFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(job.ChatTemplateKwargs); got != `{"enable_thinking":false,"date_string":"26 Jul 2024"}` {
		t.Errorf("kwargs = %s", got)
	}
	os.WriteFile(jobFile, []byte("model: m\nprompts: p.jsonl\nchat_template_kwargs: [enable_thinking]\n"), 0o644)
	if _, err := LoadJob(jobFile); err == nil || !strings.Contains(err.Error(), jobFile) || !strings.Contains(err.Error(), "chat_template_kwargs") {
		t.Errorf("a list of kwargs: err = %v, want one naming the file and key", err)
	}

	testsupport.RequireORT(t)
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	w, _ := llama.RandomWeights(cfg, 9)
	model := filepath.Join(t.TempDir(), "chat")
	if _, err := llama.WriteFolder(model, llama.FolderSpec{Config: cfg, Weights: w}); err != nil {
		t.Fatal(err)
	}
	prompts := filepath.Join(t.TempDir(), "p.jsonl")
	os.WriteFile(prompts, []byte(`{"id":"m","messages":[{"role":"user","content":"2+2?"}],"answer":"4"}`+"\n"), 0o644)
	out := filepath.Join(t.TempDir(), "k.jsonl")
	first := tinyJob(model, prompts, out)
	first.Format = setting.Of("chat")
	first.ChatTemplateKwargs, _ = chat.ParseKwargs(`{"enable_thinking": false}`)
	if _, err := quietRun(t, context.Background(), first, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readSettings(t, out).Values["chat_template_kwargs"]; got != `{"enable_thinking":false}` {
		t.Errorf("recorded chat_template_kwargs %q", got)
	}
	other := first
	other.ChatTemplateKwargs, _ = chat.ParseKwargs(`{"enable_thinking": true}`)
	_, err = quietRun(t, context.Background(), other, RunOptions{})
	if got := strings.Join(mismatchKeys(t, err), ","); got != "chat_template_kwargs" {
		t.Errorf("resume with other kwargs: differing keys %q (err %v), want chat_template_kwargs", got, err)
	}

	plain := tinyJob(tinyPolicy(t), prompts, filepath.Join(t.TempDir(), "p.jsonl"))
	plain.ChatTemplateKwargs = first.ChatTemplateKwargs
	if _, err := quietRun(t, context.Background(), plain, RunOptions{}); err == nil || !strings.Contains(err.Error(), "chat_template_kwargs") {
		t.Errorf("plain format with kwargs: err = %v", err)
	}
}

// TestChatFormatRefusesAnotherToolCallFormat: in chat format the template
// decides the call form; a job's tool_call_format naming another is
// refused before sampling, naming the key, the template and its form.
func TestChatFormatRefusesAnotherToolCallFormat(t *testing.T) {
	model, _, _ := qwenChatModel(t)
	prompts := filepath.Join(t.TempDir(), "p.jsonl")
	os.WriteFile(prompts, []byte(`{"id":"m","prompt":"2+2?","answer":"4"}`+"\n"), 0o644)
	job := tinyJob(model, prompts, filepath.Join(t.TempDir(), "o.jsonl"))
	job.Format, job.ToolCallFormat = setting.Of("chat"), setting.Of("bracket")
	job.Tools = setting.Of(filepath.Join(testsupport.RepoRoot(t), "tools", "testdata", "calc.yaml"))
	_, err := quietRun(t, context.Background(), job, RunOptions{})
	for _, want := range []string{"tool_call_format: bracket", chat.TemplateFile, "renders hermes calls"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to contain %q", err, want)
		}
	}
	job.ToolCallFormat = setting.Of("hermes")
	if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
		t.Errorf("tool_call_format: hermes with a Hermes template: %v", err)
	}
}
