package trainer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadConfigKeysFollowJobFileRules: the rollout key of a train
// config is a job (orchestrator.Job, one declaration): an explicit 0 is a
// value, refused naming the key where it is out of range, temperature 0 is
// greedy (which a train run refuses), max_tool_calls 0 means no calls and a
// negative one is refused. Before, rollout.group_size: 0 ran with 8 and
// temperature: 0 trained at temperature 1.
func TestLoadConfigKeysFollowJobFileRules(t *testing.T) {
	dir := t.TempDir()
	head := "iterations: 1\nprompts_per_iteration: 2\nout: o\nrollout:\n  model: m\n  prompts: p.jsonl\n"
	for _, c := range []struct {
		body, wantErr string
		wantCalls     int
	}{
		{body: "  group_size: 0\n", wantErr: "rollout: group_size: 0, want ≥ 1"},
		{body: "  limits:\n    max_turns: 0\n", wantErr: "rollout: limits.max_turns: 0, want ≥ 1"},
		{body: "  sampling:\n    temperature: 0\n", wantErr: "greedy samples cannot be trained"},
		{body: "  sampling:\n    temperature: 0\n    greedy: false\n", wantErr: "rollout: sampling: temperature 0 with greedy false (the file)"},
		{body: "  limits:\n    max_tool_calls: -2\n", wantErr: "limits.max_tool_calls: -2"},
		{body: "  limits:\n    max_tool_calls: 0\n", wantCalls: 0},
		{body: "  group_size: 4\n", wantCalls: 3},
		{body: "eval:\n  every: 0\n", wantErr: "eval.every: 0, want ≥ 1"},
		{body: "eval:\n  group_size: 0\n", wantErr: "eval.group_size: 0, want ≥ 1"},
		{body: "iteration_timeout: 0s\n", wantErr: "iteration_timeout: 0s, want > 0"},
		{body: "eval:\n  every: 2\n  group_size: 2\niteration_timeout: 1m\n", wantCalls: 3},
		{body: "rollout_quantization:\n  bits: 8\n  block_size: 0\n", wantErr: "rollout_quantization.block_size: 0, want ≥ 1"},
		{body: "rollout_quantization:\n  bits: 16\n", wantErr: "rollout_quantization.bits: 16, want 8 or 4"},
		{body: "rollout_quantization:\n  block_size: 32\n", wantErr: "rollout_quantization.bits: 0, want 8 or 4"},
		{body: "rollout_quantization:\n  bits: 4\n  accuracy_level: 2\n", wantErr: "rollout_quantization: quantization: accuracy level 2"},
		{body: "rollout_quantization:\n  bits: 8\n  bogus: 1\n", wantErr: "field bogus not found"},
		{body: "rollout_quantization:\n  bits: 8\n  accuracy_level: 4\n  lm_head: true\n", wantCalls: 3},
	} {
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, []byte(head+c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(path)
		if err == nil {
			err = cfg.Normalize()
		}
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: err = %v, want %q", c.body, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.body, err)
			continue
		}
		if got := cfg.Rollout.Limits.MaxToolCalls.Get(); got != c.wantCalls {
			t.Errorf("%q: rollout max_tool_calls %d, want %d", c.body, got, c.wantCalls)
		}
	}
}
