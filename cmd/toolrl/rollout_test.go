package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/models/llama"
	"github.com/toolrl/toolrl/traj"
)

func TestRolloutUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"rollout"},                 // no model
		{"rollout", "--model", "m"}, // no prompts
		{"rollout", "--model", "m", "--prompts", "p", "--group-size", "-1"},
		{"rollout", "--worker"},                        // worker without --redis
		{"rollout", "--job-file", "/nonexistent.yaml"}, // unreadable job file
		{"rollout", "--model", "m", "--prompts", "p", "--iteration", "-1"},
		// a worker takes each entry's iteration; --iteration is for enqueueing
		{"rollout", "--redis", "redis://127.0.0.1:1/0", "--job", "j", "--worker", "--iteration", "1"},
	} {
		root := newRootCmd()
		root.SetArgs(args)
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: err = %v, want a usage error (exit 2)", args, err)
		}
	}
}

// TestRolloutInterruptExits130 runs the real binary on a tiny model, sends
// SIGINT once output has started, and expects exit 130, a printed summary
// that says so, and an output of whole groups only.
func TestRolloutInterruptExits130(t *testing.T) {
	testsupport.RequireORT(t)
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "toolrl")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	w, _ := llama.RandomWeights(cfg, 1)
	model := filepath.Join(dir, "model")
	_, err = llama.WriteFolder(model, llama.FolderSpec{Config: cfg, Weights: w, ExtraFiles: map[string][]byte{
		"prompt_format.json": []byte(`{"kind":"plain","template":"Q: {prompt}\nA:","tool_call_format":"bracket"}`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	var prompts strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&prompts, `{"id":"p%d","prompt":"%d + 1","answer":"%d"}`+"\n", i, i, i+1)
	}
	promptsPath := filepath.Join(dir, "prompts.jsonl")
	os.WriteFile(promptsPath, []byte(prompts.String()), 0o644)
	out := filepath.Join(dir, "out.jsonl")

	cmd := exec.Command(bin, "rollout", "--model", model, "--prompts", promptsPath, "--group-size", "4",
		"--batch", "8", "--threads", "1", "--max-new-tokens", "32", "--out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the first group on disk (bounded), then interrupt.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if st, err := os.Stat(out); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no output after 60 s\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Fatalf("exit: %v, want code %d\nstdout:\n%s\nstderr:\n%s", err, exitInterrupted, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "interrupted") || !strings.Contains(stdout.String(), "groups") {
		t.Errorf("no interrupted summary on stdout:\n%s", stdout.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	count := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	lines := 0
	for sc.Scan() {
		lines++
		line := sc.Text()
		i := strings.Index(line, `"group_id":"`)
		rest := line[i+len(`"group_id":"`):]
		count[rest[:strings.IndexByte(rest, '"')]]++
	}
	if lines == 0 || lines >= 8000 {
		t.Fatalf("%d lines: the interrupt did not stop the job part-way", lines)
	}
	for g, n := range count {
		if n != 4 {
			t.Errorf("group %s has %d of 4 trajectories", g, n)
		}
	}
}

// TestRolloutIterationFlag: the default policy's prompts in iterations 0 and
// 2 of one job land in one file as separate groups (calc-0000, calc-0000@2)
// with the iteration recorded, their advantage records carry it, and
// iteration 2 again writes nothing.
func TestRolloutIterationFlag(t *testing.T) {
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	dir := t.TempDir()
	roll, adv := filepath.Join(dir, "roll.jsonl"), filepath.Join(dir, "adv.parquet")
	rollout := func(iteration string) string {
		stdout, stderr, err := runToolrl(t, "rollout", "--model", filepath.Join(root, "models", "calc"),
			"--prompts", filepath.Join(root, "data", "calc", "prompts.jsonl"), "--out", roll,
			"--limit", "2", "--group-size", "2", "--seed", "1", "--job", "it", "--iteration", iteration)
		if err != nil {
			t.Fatalf("rollout --iteration %s: %v\n%s", iteration, err, stderr)
		}
		return stdout
	}
	rollout("0")
	rollout("2")
	if out := rollout("2"); !strings.Contains(out, "2 groups already done") {
		t.Errorf("iteration 2 again: summary does not say both groups were done:\n%s", out)
	}
	data, err := os.ReadFile(roll)
	if err != nil {
		t.Fatal(err)
	}
	var groups []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		tr, err := traj.UnmarshalTrajectory([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if len(groups) == 0 || groups[len(groups)-1] != tr.GroupID {
			groups = append(groups, tr.GroupID)
		}
		if want := traj.TrajectoryID("it", tr.PromptID, tr.Iteration, tr.SampleIndex); tr.ID != want {
			t.Errorf("id %s, want %s", tr.ID, want)
		}
	}
	if want := []string{"it/calc-0000", "it/calc-0001", "it/calc-0000@2", "it/calc-0001@2"}; !slices.Equal(groups, want) {
		t.Fatalf("groups %v, want %v", groups, want)
	}
	if _, stderr, err := runToolrl(t, "advantage", "--in", roll, "--out", adv); err != nil {
		t.Fatalf("advantage: %v\n%s", err, stderr)
	}
	r, err := export.OpenAdvantages(adv)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		if want := 2 * strings.Count(rec.GroupID, "@2"); rec.Iteration != want {
			t.Errorf("record %s: iteration %d, want %d", rec.TrajectoryID, rec.Iteration, want)
		}
	}
	if n != 8 {
		t.Errorf("%d advantage records, want 8", n)
	}
}
