package trainer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainConfigChatTemplateKwargs: rollout.chat_template_kwargs of a
// train config reach the rollout job (and so every iteration's and the
// evaluation's rendering) in the order written; a non-mapping is refused
// naming the file.
func TestTrainConfigChatTemplateKwargs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	head := "iterations: 1\nprompts_per_iteration: 2\nout: o\nrollout:\n  model: m\n  prompts: p.jsonl\n  format: chat\n"
	os.WriteFile(path, []byte(head+"  chat_template_kwargs: {enable_thinking: false, x: [2, 1]}\n"), 0o644)
	cfg, err := LoadConfig(path)
	if err == nil {
		err = cfg.Normalize()
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := string(cfg.Rollout.ChatTemplateKwargs); got != `{"enable_thinking":false,"x":[2,1]}` {
		t.Errorf("rollout kwargs %s", got)
	}
	os.WriteFile(path, []byte(head+"  chat_template_kwargs: true\n"), 0o644)
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), "chat_template_kwargs") || !strings.Contains(err.Error(), path) {
		t.Errorf("kwargs: true: err = %v, want one naming the file and key", err)
	}
}
