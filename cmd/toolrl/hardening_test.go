package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

// links returns path itself, a path spelt differently, a symlink and a hard
// link to it: all name the same file.
func links(t *testing.T, path string) []string {
	t.Helper()
	dir := filepath.Dir(path)
	sym, hard := filepath.Join(dir, "sym-"+filepath.Base(path)), filepath.Join(dir, "hard-"+filepath.Base(path))
	if err := os.Symlink(path, sym); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, hard); err != nil {
		t.Fatal(err)
	}
	return []string{path, filepath.Join(dir, ".", filepath.Base(path)), sym, hard}
}

// wantUsageError checks err is a usage error (exit 2) whose message holds
// every one of want.
func wantUsageError(t *testing.T, args []string, err error, want ...string) {
	t.Helper()
	var ue usageError
	if !errors.As(err, &ue) {
		t.Errorf("%v: err = %v, want a usage error (exit 2)", args, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v: error %q does not name %q", args, err, w)
		}
	}
}

// TestOutputThatIsAnInputIsRefused: every verb that reads a file and writes
// another refuses an output that is the input's file (by name, by another
// spelling, by a symlink or by a hard link), names both, and leaves the input
// as it was. Before, advantage --in X --out X emptied X and exited 0.
func TestOutputThatIsAnInputIsRefused(t *testing.T) {
	dir := t.TempDir()
	adv := filepath.Join(dir, "trajectories.jsonl")
	writeAdvInput(t, adv)
	prompts := filepath.Join(dir, "prompts.jsonl")
	if err := os.WriteFile(prompts, []byte(`{"id":"p1","prompt":"1+1","answer":"2"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	records := filepath.Join(dir, "records.jsonl")
	if err := os.WriteFile(records, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jobFile := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(jobFile, []byte("model: m\nprompts: prompts.jsonl\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		in   string
		args func(out string) []string
	}{
		{adv, func(out string) []string { return []string{"advantage", "--in", adv, "--out", out} }},
		{adv, func(out string) []string { return []string{"export", "--from", adv, "--to", out} }},
		{prompts, func(out string) []string {
			return []string{"rollout", "--model", "m", "--prompts", prompts, "--out", out, "--resume=false"}
		}},
		{jobFile, func(out string) []string { return []string{"rollout", "--job-file", jobFile, "--out", out} }},
		{records, func(out string) []string {
			return []string{"learn", "--model", "m", "--in", records, "--store", filepath.Join(dir, "store"), "--metrics", out}
		}},
		{records, func(out string) []string {
			return []string{"learn", "--model", "m", "--in", records, "--store", out}
		}},
	}
	linked := map[string][]string{}
	for _, c := range cases {
		if linked[c.in] == nil {
			linked[c.in] = links(t, c.in)
		}
		before, err := os.ReadFile(c.in)
		if err != nil {
			t.Fatal(err)
		}
		for _, out := range linked[c.in] {
			args := c.args(out)
			_, _, err := runToolrl(t, args...)
			wantUsageError(t, args, err, out, c.in)
			if after, _ := os.ReadFile(c.in); !bytes.Equal(after, before) {
				t.Fatalf("%v: the input %s changed", args, c.in)
			}
		}
	}
}

// TestInvalidFlagValuesAreRefused: a value the verb used to replace silently
// by its default (--group-size 0 became 8) or accept (--threads -4) is a
// usage error naming the flag.
func TestInvalidFlagValuesAreRefused(t *testing.T) {
	base := []string{"rollout", "--model", "m", "--prompts", "p"}
	redisURL := "redis://127.0.0.1:1/0"
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"--group-size", append(base, "--group-size", "0")},
		{"--max-new-tokens", append(base, "--max-new-tokens", "0")},
		{"--batch", append(base, "--batch", "0")},
		{"--threads", append(base, "--threads", "-4")},
		{"--limit", append(base, "--limit", "-1")},
		{"--policy-version", append(base, "--policy-version", "-1")},
		{"--temperature", append(base, "--temperature", "-0.5")},
		{"--temperature", append(base, "--temperature", "NaN")},
		{"--greedy", append(base, "--temperature", "0.7", "--greedy")},
		{"--greedy", append(base, "--temperature", "0", "--greedy=false")},
		{"--claim-idle", []string{"rollout", "--model", "m", "--redis", redisURL, "--job", "j", "--worker", "--claim-idle", "0s"}},
		{"--ref-batch", []string{"advantage", "--in", "a.jsonl", "--out", "b.jsonl", "--ref-batch", "0"}},
		{"--policy-version", []string{"advantage", "--in", "a.jsonl", "--out", "b.jsonl", "--policy-version", "-1"}},
		{"--workers", []string{"advantage", "serve", "--redis", redisURL, "--job", "j", "--workers", "0"}},
		{"--batch", []string{"advantage", "serve", "--redis", redisURL, "--job", "j", "--batch", "0"}},
		{"--claim-idle", []string{"advantage", "serve", "--redis", redisURL, "--job", "j", "--claim-idle", "0s"}},
		{"--max-deliveries", []string{"advantage", "serve", "--redis", redisURL, "--job", "j", "--max-deliveries", "0"}},
		{"--max-wait", []string{"learn", "--model", "m", "--redis", redisURL, "--job", "j", "--store", "s", "--max-wait", "0s"}},
	} {
		_, _, err := runToolrl(t, c.args...)
		wantUsageError(t, c.args, err, c.flag)
	}
}

// TestJobFileExplicitZerosAreRefused: a job-file key whose 0 Normalize reads
// as "unset" is refused when written as 0, naming the key; so are negative
// threads and a greedy: true that contradicts a temperature.
func TestJobFileExplicitZerosAreRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ yaml, want string }{
		{"group_size: 0", "group_size"},
		{"batch: 0", "batch"},
		{"tool_concurrency: 0", "tool_concurrency"},
		{"threads: -4", "threads"},
		{"tool_concurrency: -1", "tool_concurrency"},
		{"policy_version: -1", "policy_version"},
		{"sampling:\n  max_new_tokens: 0", "sampling.max_new_tokens"},
		{"sampling:\n  top_p: 0", "sampling.top_p"},
		{"sampling:\n  greedy: true\n  temperature: 0.7", "greedy"},
		{"sampling:\n  greedy: false\n  temperature: 0", "greedy"},
		{"limits:\n  max_tool_calls: -1", "limits.max_tool_calls: -1"}, // 0 is "no calls" (TestLoadJobMaxToolCalls)
		{"limits:\n  max_tokens: 0", "limits.max_tokens"},
	} {
		path := filepath.Join(dir, "job.yaml")
		if err := os.WriteFile(path, []byte("model: m\nprompts: p.jsonl\n"+c.yaml+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"rollout", "--job-file", path}
		_, _, err := runToolrl(t, args...)
		wantUsageError(t, append(args, c.yaml), err, c.want)
	}
}

// TestExplicitTemperatureZeroIsGreedy: --temperature 0 and a job file's
// temperature: 0 sample greedily (every trajectory records temperature 0),
// as the docs define; before, both silently sampled at T=1.
func TestExplicitTemperatureZeroIsGreedy(t *testing.T) {
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	dir := t.TempDir()
	model, prompts := filepath.Join(root, "models", "calc"), filepath.Join(root, "data", "calc", "prompts.jsonl")
	jobFile := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(jobFile, []byte("model: "+model+"\nprompts: "+prompts+"\nsampling:\n  temperature: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"flag":     {"--model", model, "--prompts", prompts, "--temperature", "0"},
		"job file": {"--job-file", jobFile},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".jsonl")
		args = append([]string{"rollout", "--out", out, "--limit", "1", "--group-size", "2", "--max-new-tokens", "8"}, args...)
		if _, stderr, err := runToolrl(t, args...); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, stderr)
		}
		r, err := export.OpenTrajectories(out)
		ts := trajtest.ReadAll(t, r, err)
		if len(ts) != 2 {
			t.Fatalf("%s: %d trajectories, want 2", name, len(ts))
		}
		for _, tr := range ts {
			if tr.Temperature == nil {
				t.Errorf("%s: %s records no temperature", name, tr.ID)
			} else if *tr.Temperature != 0 {
				t.Errorf("%s: %s sampled at temperature %g, want 0 (greedy)", name, tr.ID, *tr.Temperature)
			}
		}
	}
}

// TestEmptyPromptsFileFails: an empty or blank prompts file is an error
// naming the file (before, the rollout wrote nothing and exited 0), for a
// rollout and for enqueueing.
func TestEmptyPromptsFileFails(t *testing.T) {
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	dir := t.TempDir()
	for name, content := range map[string]string{"empty.jsonl": "", "blank.jsonl": "\n  \n\t\n"} {
		prompts := filepath.Join(dir, name)
		if err := os.WriteFile(prompts, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := runToolrl(t, "rollout", "--model", filepath.Join(root, "models", "calc"), "--prompts", prompts,
			"--out", filepath.Join(dir, "out.jsonl"))
		if err == nil || !strings.Contains(err.Error(), prompts) || !strings.Contains(err.Error(), "no prompts") {
			t.Errorf("%s: err = %v, want one naming the file and saying it has no prompts", name, err)
		}
	}
}

// TestSetOverridesReachTheRecord: --set KEY=VALUE sets any key of a job or a
// train config over the file and the flags, and an error names the key.
func TestSetOverridesReachTheRecord(t *testing.T) {
	root := testsupport.RepoRoot(t)
	model, prompts := filepath.Join(root, "models", "calc"), filepath.Join(root, "data", "calc", "prompts.jsonl")
	out := filepath.Join(t.TempDir(), "set.jsonl")
	stdout, stderr, err := runToolrl(t, "rollout", "--model", model, "--prompts", prompts, "--limit", "2", "--group-size", "2",
		"--temperature", "0.9", "--set", "sampling.temperature=0.6", "--set", "limits.max_tool_calls=0", "--out", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "temperature 0.6 (--set)") {
		t.Errorf("summary does not report the --set temperature:\n%s", stdout)
	}
	capped := 0
	for _, tr := range testsupport.ReadJSONLines[traj.Trajectory](t, out) {
		if *tr.Temperature != 0.6 || (tr.FinishReason != traj.FinishMaxToolCalls && tr.FinishReason != traj.FinishStop) {
			t.Errorf("%s: temperature %v, finish %s: want 0.6, and no call run", tr.ID, *tr.Temperature, tr.FinishReason)
		}
		if tr.FinishReason == traj.FinishMaxToolCalls {
			capped++
		}
	}
	if capped == 0 {
		t.Error("no trajectory ended at its first call: limits.max_tool_calls=0 did not apply")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"rollout", "--model", model, "--prompts", prompts, "--set", "limits.max_tool_calls=-1"}, "limits.max_tool_calls: -1, want ≥ 0"},
		{[]string{"rollout", "--model", model, "--prompts", prompts, "--set", "group_size=0"}, "group_size: 0, want ≥ 1"},
		{[]string{"rollout", "--model", model, "--prompts", prompts, "--set", "limits.max_tool_call=1"}, "did you mean limits.max_tool_calls?"},
		{[]string{"train", "--config", filepath.Join(root, "experiments", "calc-smoke.yaml"), "--set", "rollout.sampling.temperature=0"}, "greedy samples cannot be trained with a ratio (temperature 0 from --set)"},
		{[]string{"train", "--config", filepath.Join(root, "experiments", "calc-smoke.yaml"), "--set", "rollout.sampling.temperature=hot"}, `rollout.sampling.temperature: "hot" is not a valid float value`},
	} {
		_, _, err := runToolrl(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}
