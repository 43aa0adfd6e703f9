package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
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
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
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
		// --follow keeps a worker waiting; --watch redis follows the job's pointer
		{"rollout", "--model", "m", "--prompts", "p", "--follow"},
		{"rollout", "--model", "m", "--prompts", "p", "--watch", "redis"},
		{"rollout", "--redis", "redis://127.0.0.1:1/0", "--job", "j", "--prompts", "p", "--watch", "redis"},
		{"rollout", "--model", "m", "--prompts", "p", "--watch", "/nonexistent/store"},
		{"rollout", "--redis", "redis://127.0.0.1:1/0", "--job", "j", "--worker", "--min-policy-version", "1"},
		{"rollout", "--redis", "redis://127.0.0.1:1/0", "--job", "j", "--prompts", "p", "--min-policy-version", "-1"},
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
	bin := toolrlBinary(t, "builds the binary")
	dir := t.TempDir()
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
		tr, err := wire.DecodeTrajectory([]byte(line))
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
	recs := trajtest.ReadAll(t, r, err)
	for _, rec := range recs {
		if want := 2 * strings.Count(rec.GroupID, "@2"); rec.Iteration != want {
			t.Errorf("record %s: iteration %d, want %d", rec.TrajectoryID, rec.Iteration, want)
		}
	}
	if len(recs) != 8 {
		t.Errorf("%d advantage records, want 8", len(recs))
	}
}

// TestRolloutWorkerFollowsAndWatches runs `toolrl rollout --worker --follow
// --watch STORE` as a subprocess against a real redis-server: it samples the
// first iteration with the store's version 1, keeps running once the stream
// is drained, samples a later iteration with version 2 (published before it
// was enqueued), and exits 130 on SIGINT with the reloads in its summary.
func TestRolloutWorkerFollowsAndWatches(t *testing.T) {
	testsupport.RequireORT(t)
	bin := toolrlBinary(t, "builds the binary")
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	dir := t.TempDir()
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	folder := func(seed uint64) func(string) error {
		w, err := llama.RandomWeights(cfg, seed)
		if err != nil {
			t.Fatal(err)
		}
		return func(dir string) error {
			_, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w, ExtraFiles: map[string][]byte{
				"prompt_format.json": []byte(`{"kind":"plain","template":"Q: {prompt}\nA:","tool_call_format":"bracket"}`),
			}})
			return err
		}
	}
	base := filepath.Join(dir, "base")
	if err := folder(1)(base); err != nil {
		t.Fatal(err)
	}
	storeDir := filepath.Join(dir, "store")
	store, err := policystore.Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	if _, err := store.Publish(ctx, 1, nil, folder(2)); err != nil {
		t.Fatal(err)
	}
	client := srv.Client(t)
	const job = "follow"
	keys := stream.JobKeys(job)
	enqueue := func(iteration int) {
		t.Helper()
		var ps []prompt.Prompt
		for i := range 2 {
			ps = append(ps, prompt.Prompt{ID: fmt.Sprintf("p%d", i), Prompt: fmt.Sprintf("%d + 1", i), Iteration: iteration})
		}
		if n, err := prompt.Enqueue(ctx, client, job, ps); err != nil || n != 2 {
			t.Fatalf("enqueue iteration %d: %d, %v", iteration, n, err)
		}
	}
	enqueue(0)

	proc := startBackground(t, bin, "rollout", "--model", base, "--redis", srv.URL(), "--job", job, "--worker", "--follow",
		"--watch", storeDir, "--group-size", "4", "--batch", "8", "--threads", "1", "--max-new-tokens", "16")
	fail := func(format string, args ...any) { t.Helper(); proc.fatalf(t, format, args...) }
	waitGroups := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			if got, _ := client.XLen(ctx, keys.Groups).Result(); got >= n {
				return
			}
			select {
			case <-proc.done:
				fail("worker exited (%v) before %d groups", proc.err, n)
			default:
			}
			if time.Now().After(deadline) {
				fail("fewer than %d groups after 60 s", n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitGroups(2)
	// The stream is drained now; a worker without --follow exits here.
	select {
	case <-proc.done:
		fail("worker exited (%v) once the stream was drained", proc.err)
	case <-time.After(700 * time.Millisecond):
	}
	if _, err := store.Publish(ctx, 2, nil, folder(3)); err != nil {
		fail("publish version 2: %v", err)
	}
	enqueue(1)
	waitGroups(4)
	proc.cmd.Process.Signal(syscall.SIGINT)
	var exit *exec.ExitError
	select {
	case <-proc.done:
		err := proc.err
		if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
			fail("exit: %v, want code %d", err, exitInterrupted)
		}
	case <-time.After(30 * time.Second):
		fail("still running 30 s after SIGINT")
	}
	if want := "policy         version 2 at the end; 2 reloads (to 1, 2)"; !strings.Contains(proc.stdout.String(), "interrupted") || !strings.Contains(proc.stdout.String(), want) {
		t.Errorf("summary does not say interrupted and %q:\n%s", want, proc.stdout.String())
	}
	for _, line := range strings.Split(proc.stdout.String(), "\n") {
		if strings.Contains(line, "policy ") {
			t.Log(strings.TrimSpace(line))
		}
	}
	msgs, err := client.XRange(ctx, keys.Groups, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]int64{}
	for _, m := range msgs {
		g, err := stream.DecodeGroupEntry(stream.Message{ID: m.ID, Values: m.Values})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range g.Trajectories {
			versions[tr.GroupID] = tr.PolicyVersion
		}
	}
	want := map[string]int64{"follow/p0": 1, "follow/p1": 1, "follow/p0@1": 2, "follow/p1@1": 2}
	if fmt.Sprint(versions) != fmt.Sprint(want) {
		t.Errorf("group versions %v, want %v", versions, want)
	}
}
