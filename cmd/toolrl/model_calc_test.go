package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/recipe/calceval"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/trainer"
)

// TestModelEvalIsTrainerEvaluate: `toolrl model eval` on models/calc is
// trainer.Evaluate on the job its flags describe. Its --json output equals a
// direct call's EvalMetrics (wall time aside); its table shows the overall
// column and both difficulty splits with the same figures; --samples-out
// holds the very groups, byte for byte what `toolrl rollout` writes for the
// same job and seed. (The intervals are curves.ClusterRobust and curves.Wilson, tested there.)
func TestModelEvalIsTrainerEvaluate(t *testing.T) {
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	model := filepath.Join(root, "models", "calc")
	prompts := filepath.Join(root, "data", "calc", "prompts.jsonl")
	dir := t.TempDir()
	samples := filepath.Join(dir, "eval.jsonl")
	// The first 8 held-out prompts are 4 easy and 4 hard.
	args := []string{"model", "eval", "--model", model, "--prompts", prompts, "--limit", "8", "--samples", "4", "--seed", "3"}

	jsonOut, stderr, err := runToolrl(t, append(args, "--json")...)
	if err != nil {
		t.Fatalf("model eval --json: %v\n%s", err, stderr)
	}
	var got trainer.EvalMetrics
	if err := json.Unmarshal([]byte(jsonOut), &got); err != nil {
		t.Fatalf("--json output %q: %v", jsonOut, err)
	}

	// The job the flags describe, written out here rather than taken from
	// the command's own code.
	job := orchestrator.Job{ID: setting.Of("eval"), Model: setting.Of(model), Prompts: setting.Of(prompts), Limit: setting.Of(8), GroupSize: setting.Of(4), Seed: setting.Of[uint64](3),
		Sampling: orchestrator.SamplingSpec{Temperature: setting.Of[float64](1), MaxNewTokens: setting.Of(64)}}
	if err := job.Normalize(); err != nil {
		t.Fatal(err)
	}
	set, err := prompt.ReadFile(prompts, 8, false)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	want, groups, err := trainer.Evaluate(context.Background(), job, set.Prompts, []string{"difficulty"}, logger)
	if err != nil {
		t.Fatal(err)
	}
	got.Overall.Seconds, want.Overall.Seconds = 0, 0
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("model eval --json\n%+v\nwant trainer.Evaluate's\n%+v", got, want)
	}
	for _, d := range []string{"easy", "hard"} {
		if s := want.Split["difficulty"][d]; s.Groups != 4 || s.Trajectories != 16 {
			t.Fatalf("difficulty %s: %d groups, %d trajectories; want 4 and 16", d, s.Groups, s.Trajectories)
		}
	}

	report, stderr, err := runToolrl(t, append(args, "--samples-out", samples)...)
	if err != nil {
		t.Fatalf("model eval: %v\n%s", err, stderr)
	}
	header, table, _ := strings.Cut(report, "\n")
	if !strings.Contains(header, "8 prompts") || !strings.Contains(header, "4 samples each") {
		t.Errorf("header %q does not give the prompts and samples", header)
	}
	var direct bytes.Buffer
	if err := calceval.WriteTable(&direct, &job, want, groups, []string{"difficulty"}); err != nil {
		t.Fatal(err)
	}
	if table != direct.String() {
		t.Fatalf("model eval's table\n%s\nwant the table of trainer.Evaluate's figures\n%s", table, direct.String())
	}
	lines := strings.Split(table, "\n")
	for _, col := range []string{"all", "difficulty=easy", "difficulty=hard"} {
		if !strings.Contains(lines[0], col) {
			t.Errorf("table header %q has no column %s", lines[0], col)
		}
	}
	// The accuracy row counts what the orchestrator's answer check counts.
	right := 0
	for i := range groups {
		for j := range groups[i].Trajectories {
			tr := groups[i].Trajectories[j]
			if job.Rewards.Score(&tr, tr.Answer) {
				right++
			}
		}
	}
	if cell := fmt.Sprintf("(%d/32)", right); !strings.HasPrefix(lines[3], "accuracy") || !strings.Contains(lines[3], cell) {
		t.Errorf("accuracy row %q, want %s overall", lines[3], cell)
	}

	evalFile, err := os.ReadFile(samples)
	if err != nil {
		t.Fatal(err)
	}
	roll := filepath.Join(dir, "rollout.jsonl")
	if _, stderr, err := runToolrl(t, "rollout", "--job", "eval", "--model", model, "--prompts", prompts, "--limit", "8",
		"--group-size", "4", "--seed", "3", "--max-new-tokens", "64", "--out", roll); err != nil {
		t.Fatalf("rollout: %v\n%s", err, stderr)
	}
	rollFile, err := os.ReadFile(roll)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(evalFile, []byte("\n")); n != 32 {
		t.Fatalf("--samples-out: %d lines, want 32", n)
	}
	if !bytes.Equal(evalFile, rollFile) {
		t.Fatal("--samples-out differs from toolrl rollout's output for the same job and seed")
	}
}

func TestModelEvalUsageErrorsExit2(t *testing.T) {
	root := testsupport.RepoRoot(t)
	model := filepath.Join(root, "models", "calc")
	prompts := filepath.Join(root, "data", "calc", "prompts.jsonl")
	ok := []string{"model", "eval", "--model", model, "--prompts", prompts}
	for _, extra := range [][]string{
		{"--samples", "0"},
		{"--temperature", "-1"},
		{"--limit", "-1"},
		{"--max-new-tokens", "0"},
		{"--threads", "-1"},
		{"--split-by", "difficulty,,x"},
		{"--model", filepath.Join(root, "no-such-model")},
		{"--prompts", filepath.Join(root, "no-such-prompts.jsonl")},
		{"--samples-out", filepath.Join(t.TempDir(), "samples.txt")},
		{"--samples-out", "redis://127.0.0.1:1/0"},
	} {
		args := append(append([]string{}, ok...), extra...)
		_, _, err := runToolrl(t, args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), extra[0]) {
			t.Errorf("model eval %v: err = %v, want a usage error (exit 2) naming %s", extra, err, extra[0])
		}
	}
}
