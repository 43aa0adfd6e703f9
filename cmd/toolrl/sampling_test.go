package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/tinymodel"
	"github.com/toolrl/toolrl/traj"
)

// TestRolloutSamplingPrecedence: the model folder's generation_config.json
// (temperature 0.5) applies when the job file and flags say nothing, a job
// file's sampling.temperature overrides it, --temperature overrides both,
// and the summary names the source of each.
func TestRolloutSamplingPrecedence(t *testing.T) {
	dir := t.TempDir()
	model := tinymodel.Write(t, 3, map[string][]byte{
		"prompt_format.json": []byte(`{"kind":"plain","template":"Q: {prompt}\nA:","tool_call_format":"bracket"}`),
	})
	tinymodel.SetGenerationConfig(t, model, map[string]any{"do_sample": true, "temperature": 0.5, "max_new_tokens": 6})
	prompts := filepath.Join(dir, "prompts.jsonl")
	if err := os.WriteFile(prompts, []byte(`{"id":"p0","prompt":"1 + 1","answer":"2"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jobFile := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(jobFile, []byte("model: "+model+"\nprompts: "+prompts+"\nsampling:\n  temperature: 0.7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"--group-size", "2", "--batch", "2", "--threads", "1"}
	for _, c := range []struct {
		name   string
		args   []string
		want   float64
		report string
	}{
		{"model folder", []string{"--model", model, "--prompts", prompts}, 0.5,
			"temperature 0.5 (generation_config.json), top_k 0 (default), top_p 1 (default), min_p 0 (default), max_new_tokens 6 (generation_config.json)"},
		{"job file", []string{"--job-file", jobFile}, 0.7, "temperature 0.7 (file)"},
		{"flag", []string{"--job-file", jobFile, "--temperature", "0.9", "--max-new-tokens", "4"}, 0.9, "temperature 0.9 (flag)"},
		{"greedy flag", []string{"--job-file", jobFile, "--greedy"}, 0, "temperature 0 (greedy) (flag)"},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".jsonl")
		stdout, stderr, err := runToolrl(t, append(append([]string{"rollout", "--out", out}, base...), c.args...)...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, stderr)
		}
		if !strings.Contains(stdout, "  sampling       "+c.report) {
			t.Errorf("%s: summary lacks %q:\n%s", c.name, c.report, stdout)
		}
		ts := testsupport.ReadJSONLines[traj.Trajectory](t, out)
		if len(ts) != 2 {
			t.Fatalf("%s: %d trajectories, want 2", c.name, len(ts))
		}
		for _, tr := range ts {
			if tr.Temperature == nil || *tr.Temperature != c.want {
				t.Errorf("%s: %s sampled at temperature %v, want %g", c.name, tr.ID, tr.Temperature, c.want)
			}
		}
	}
}
