package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/sink"
)

// TestRolloutRefusesAResumeWithOtherSettings runs `toolrl rollout` onto one
// output with another seed, temperature and group size: refused (exit 2)
// naming each with its old and new value; another --limit resumes;
// --force-resume appends; an output without a settings record (an older
// toolrl's) resumes with a warning and gets one.
func TestRolloutRefusesAResumeWithOtherSettings(t *testing.T) {
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	rollout := func(extra ...string) (string, string, error) {
		args := append([]string{"rollout", "--model", filepath.Join(root, "models", "calc"),
			"--prompts", filepath.Join(root, "data", "calc", "prompts.jsonl"), "--out", out, "--max-new-tokens", "16"}, extra...)
		return runToolrl(t, args...)
	}
	if _, stderr, err := rollout("--limit", "1", "--seed", "7", "--group-size", "2"); err != nil {
		t.Fatalf("first run: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(sink.SettingsPath(out)); err != nil {
		t.Fatalf("no settings record beside the output: %v", err)
	}
	before, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}

	_, _, err = rollout("--limit", "1", "--seed", "8", "--group-size", "4", "--temperature", "0.7")
	var ue usageError
	if !errors.As(err, &ue) {
		t.Fatalf("resume with other settings: err = %v, want a usage error (exit 2)", err)
	}
	for _, want := range []string{"resume " + out + ": settings differ", "seed 7 → 8", "sampling.temperature 1 → 0.7", "group_size 2 → 4", "--force-resume", "another --out"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if after, _ := os.ReadFile(out); string(after) != string(before) {
		t.Error("the refused resume changed the output")
	}

	stdout, stderr, err := rollout("--limit", "2", "--seed", "7", "--group-size", "2", "--batch", "8")
	if err != nil {
		t.Fatalf("resume with another --limit and --batch: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "1 groups already done") {
		t.Errorf("resume with another --limit did not resume:\n%s", stdout)
	}

	if _, stderr, err = rollout("--limit", "3", "--seed", "8", "--group-size", "2", "--force-resume"); err != nil {
		t.Fatalf("--force-resume: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "force resume") || !strings.Contains(stderr, "seed=\"7 → 8\"") {
		t.Errorf("--force-resume warned nothing about the seed:\n%s", stderr)
	}

	// An output an older toolrl wrote: no record, so nothing to compare with.
	if err := os.Remove(sink.SettingsPath(out)); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err = rollout("--limit", "4", "--seed", "9", "--group-size", "2"); err != nil {
		t.Fatalf("resume of an output without a settings record: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "level=WARN") || !strings.Contains(stderr, "no settings record") {
		t.Errorf("no warning about the missing record:\n%s", stderr)
	}
	if _, err := os.Stat(sink.SettingsPath(out)); err != nil {
		t.Errorf("the resume did not record its settings: %v", err)
	}
}

// TestRolloutWorkerWithOtherSettingsIsRefused starts two `toolrl rollout
// --worker` on one distributed job: the second, with another temperature,
// is refused (exit 2) naming the job's settings key.
func TestRolloutWorkerWithOtherSettingsIsRefused(t *testing.T) {
	testsupport.RequireORT(t)
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	root := testsupport.RepoRoot(t)
	model := filepath.Join(root, "models", "calc")
	prompts := filepath.Join(root, "data", "calc", "prompts.jsonl")
	if _, stderr, err := runToolrl(t, "rollout", "--prompts", prompts, "--limit", "2", "--redis", srv.URL(), "--job", "fp"); err != nil {
		t.Fatalf("enqueue: %v\n%s", err, stderr)
	}
	worker := func(extra ...string) error {
		args := append([]string{"rollout", "--model", model, "--redis", srv.URL(), "--job", "fp", "--worker",
			"--group-size", "2", "--max-new-tokens", "16"}, extra...)
		_, _, err := runToolrl(t, args...)
		return err
	}
	if err := worker(); err != nil {
		t.Fatalf("first worker: %v", err)
	}
	err := worker("--temperature", "0.7")
	var ue usageError
	if !errors.As(err, &ue) {
		t.Fatalf("worker with another temperature: err = %v, want a usage error (exit 2)", err)
	}
	for _, want := range []string{"toolrl:{fp}:settings", "sampling.temperature 1 → 0.7", "another --job"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := worker("--batch", "4"); err != nil {
		t.Fatalf("worker with another --batch: %v", err)
	}
}
