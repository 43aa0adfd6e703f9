package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
)

// TestRedisDownPrintsOneError: a Redis URL whose server is down ends in one
// toolrl error naming the redacted URL, without go-redis's connection-pool
// log lines ("pool.go:770: ... failed to dial") repeated ahead of it.
func TestRedisDownPrintsOneError(t *testing.T) {
	bin := toolrlBinary(t, "runs the binary: go-redis's logger is set in main")
	root := testsupport.RepoRoot(t)
	cmd := exec.Command(bin, "rollout", "--model", filepath.Join(root, "models", "calc"),
		"--prompts", filepath.Join(root, "data", "calc", "prompts.jsonl"), "--limit", "1",
		"--out", "redis://:pw-down@127.0.0.1:1/0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("rollout to a down server succeeded:\n%s", out)
	}
	text := string(out)
	if strings.Contains(text, "pool.go") || strings.Contains(text, "pw-down") {
		t.Fatalf("output has go-redis's pool log or the password:\n%s", text)
	}
	if !strings.Contains(text, "toolrl: out redis://:xxxxx@127.0.0.1:1/0") || !strings.Contains(text, "connection refused") {
		t.Fatalf("output does not name the redacted URL and the cause:\n%s", text)
	}
}
