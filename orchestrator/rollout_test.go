package orchestrator

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/tinymodel"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/traj"
)

// tinyPolicy writes a tiny random Llama folder with a plain prompt format and
// the calculator registry, as the default model ships them.
func tinyPolicy(t *testing.T) string {
	t.Helper()
	return tinymodel.Write(t, 7, tinyPolicyFiles(t))
}

// tinyPolicyFiles are the tiny policy folder's files beside the model: a
// plain prompt format with bracket calls, and the calculator tool.
func tinyPolicyFiles(t *testing.T) map[string][]byte {
	t.Helper()
	calc, err := os.ReadFile(filepath.Join(testsupport.RepoRoot(t), "tools", "testdata", "calc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		"prompt_format.json": []byte(`{"kind":"plain","template":"Question: {prompt}\nAnswer:","tool_call_format":"bracket"}`),
		"tools.yaml":         calc,
	}
}

func writePrompts(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"id":"p%02d","prompt":"What is %d + %d?","answer":"%d","meta":{"i":%d}}`+"\n", i, i, 2*i, 3*i, i)
	}
	path := filepath.Join(t.TempDir(), "prompts.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func tinyJob(model, prompts, out string) Job {
	return Job{ID: setting.Of("t"), Model: setting.Of(model), Prompts: setting.Of(prompts), GroupSize: setting.Of(4), Seed: setting.Of[uint64](11), Batch: setting.Of(8), Threads: setting.Of(1),
		Sampling: SamplingSpec{Temperature: setting.Of[float64](1), MaxNewTokens: setting.Of(24)}, Out: setting.Of(out)}
}

func quietRun(t *testing.T, ctx context.Context, job Job, opts RunOptions) (*Summary, error) {
	t.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	opts.ProgressOut = io.Discard
	return Run(ctx, job, opts)
}

// readTrajectories reads a file of trajectories with export's reader.
func readTrajectories(t *testing.T, path string) []traj.Trajectory {
	t.Helper()
	r, err := export.OpenTrajectories(path)
	return trajtest.ReadAll(t, r, err)
}

func TestRolloutWritesWholeValidGroupsAndIsReproducible(t *testing.T) {
	model := tinyPolicy(t)
	prompts := writePrompts(t, 6)
	dir := t.TempDir()
	out1, out2 := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")

	sum, err := quietRun(t, context.Background(), tinyJob(model, prompts, out1), RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.GroupsWritten != 6 || sum.Trajectories != 24 {
		t.Fatalf("summary: %d groups, %d trajectories; want 6 and 24", sum.GroupsWritten, sum.Trajectories)
	}
	ts := readTrajectories(t, out1)
	if len(ts) != 24 {
		t.Fatalf("%d lines, want 24", len(ts))
	}
	groups := map[string]int{}
	for _, tr := range ts {
		groups[tr.GroupID]++
		if tr.JobID != "t" || tr.ID != traj.TrajectoryID("t", tr.PromptID, 0, tr.SampleIndex) {
			t.Errorf("ids: %+v", tr.ID)
		}
		if !strings.HasPrefix(tr.Model.Hash, "sha256:") || tr.Model.Name != "tiny" {
			t.Errorf("model ref %+v", tr.Model)
		}
		if string(tr.Meta) == "" || tr.Answer == "" {
			t.Errorf("meta/answer not passed through: %q %q", tr.Meta, tr.Answer)
		}
		sampled := 0
		for _, m := range tr.LossMask {
			sampled += int(m)
		}
		if sampled == 0 || sampled > 24 {
			t.Errorf("%s: %d sampled tokens, want 1..24", tr.ID, sampled)
		}
		if tr.FinishReason != traj.FinishStop && tr.FinishReason != traj.FinishLength {
			t.Errorf("%s: finish %s", tr.ID, tr.FinishReason)
		}
	}
	for id, n := range groups {
		if n != 4 {
			t.Errorf("group %s has %d members, want 4", id, n)
		}
	}

	// The same job with another batch size gives byte-identical output.
	job := tinyJob(model, prompts, out2)
	job.Batch = setting.Of(4)
	if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out1)
	b, _ := os.ReadFile(out2)
	if !sameTokens(t, out1, out2) {
		t.Fatal("batch 8 and batch 4 sampled different tokens")
	}
	job.Batch = setting.Of(8)
	out3 := filepath.Join(dir, "c.jsonl")
	job.Out = setting.Of(out3)
	if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	c, _ := os.ReadFile(out3)
	if !bytes.Equal(a, c) {
		t.Fatal("the same job and seed gave different bytes")
	}
	_ = b
}

// sameTokens compares the token sequences of two outputs, trajectory by id.
func sameTokens(t *testing.T, p1, p2 string) bool {
	t.Helper()
	byID := map[string][]int32{}
	for _, tr := range readTrajectories(t, p1) {
		byID[tr.ID] = tr.Tokens
	}
	for _, tr := range readTrajectories(t, p2) {
		if fmt.Sprint(byID[tr.ID]) != fmt.Sprint(tr.Tokens) {
			return false
		}
	}
	return len(byID) > 0
}

func TestRolloutResumesAndCutsAHalfWrittenGroup(t *testing.T) {
	model := tinyPolicy(t)
	prompts := writePrompts(t, 5)
	out := filepath.Join(t.TempDir(), "r.jsonl")
	job := tinyJob(model, prompts, out)
	job.Limit = setting.Of(3)
	if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	full, _ := os.ReadFile(out)
	lines := bytes.SplitAfter(full, []byte("\n"))
	// Simulate a crash in the middle of the third group: two of its four
	// lines and half of a third.
	crashed := bytes.Join(lines[:10], nil)
	crashed = append(crashed, lines[10][:len(lines[10])/2]...)
	if err := os.WriteFile(out, crashed, 0o644); err != nil {
		t.Fatal(err)
	}
	job.Limit = setting.Of(0)
	sum, err := quietRun(t, context.Background(), job, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.GroupsResumed != 2 || sum.GroupsWritten != 3 {
		t.Fatalf("resumed %d, wrote %d; want 2 and 3", sum.GroupsResumed, sum.GroupsWritten)
	}
	ts := readTrajectories(t, out)
	count := map[string]int{}
	for _, tr := range ts {
		count[tr.GroupID]++
	}
	if len(ts) != 20 || len(count) != 5 {
		t.Fatalf("%d trajectories in %d groups, want 20 in 5", len(ts), len(count))
	}
	// The regenerated third group equals the one the crash cut.
	if !bytes.Contains(append([]byte(nil), readAll(t, out)...), lines[8]) {
		t.Error("a resumed group differs from its first run")
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRolloutStopsCleanlyOnCancel(t *testing.T) {
	model := tinyPolicy(t)
	prompts := writePrompts(t, 40)
	out := filepath.Join(t.TempDir(), "s.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	job := tinyJob(model, prompts, out)
	job.Batch = setting.Of(4)
	feed := &cancelAfter{n: 3, cancel: cancel}
	set, err := prompt.ReadFile(prompts, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	feed.Prompts = set.Prompts
	sum, err := quietRun(t, ctx, job, RunOptions{Feed: feed})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Interrupted {
		t.Error("summary does not say interrupted")
	}
	ts := readTrajectories(t, out)
	count := map[string]int{}
	for _, tr := range ts {
		count[tr.GroupID]++
	}
	if len(count) != 3 {
		t.Fatalf("%d groups written after cancelling at the 3rd prompt, want exactly the 3 in flight", len(count))
	}
	for id, n := range count {
		if n != 4 {
			t.Errorf("group %s written with %d of 4 members", id, n)
		}
	}
}

// cancelAfter feeds prompts and cancels the run's context once n were taken.
type cancelAfter struct {
	prompt.List
	n, taken int
	cancel   context.CancelFunc
}

func (f *cancelAfter) Next(ctx context.Context, block bool) (prompt.Prompt, bool, error) {
	p, ok, err := f.List.Next(ctx, block)
	if ok {
		f.taken++
	}
	if f.taken == f.n {
		f.cancel()
	}
	return p, ok, err
}

func TestRolloutRejectsBadJobs(t *testing.T) {
	model := tinyPolicy(t)
	prompts := writePrompts(t, 2)
	job := tinyJob(model, prompts, filepath.Join(t.TempDir(), "x.jsonl"))
	job.Batch, job.GroupSize = setting.Of(2), setting.Of(4)
	if _, err := quietRun(t, context.Background(), job, RunOptions{}); err == nil || !strings.Contains(err.Error(), "batch") {
		t.Errorf("batch < group size: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte("{\"id\":\"a\",\"prompt\":\"x\"}\nnot json\n"), 0o644)
	job = tinyJob(model, bad, filepath.Join(t.TempDir(), "y.jsonl"))
	if _, err := quietRun(t, context.Background(), job, RunOptions{}); err == nil || !strings.Contains(err.Error(), bad+":2") {
		t.Errorf("malformed prompt line: %v, want the file:line", err)
	}
	job.SkipInvalid = setting.Of(true)
	sum, err := quietRun(t, context.Background(), job, RunOptions{})
	if err != nil || sum.PromptsSkipped != 1 || sum.GroupsWritten != 1 {
		t.Errorf("skip-invalid: %v, %+v", err, sum)
	}
}

func TestRolloutWithoutResumeReplacesTheOutput(t *testing.T) {
	model := tinyPolicy(t)
	prompts := writePrompts(t, 2)
	out := filepath.Join(t.TempDir(), "f.jsonl")
	job := tinyJob(model, prompts, out)
	for range 2 {
		no := false
		job.Resume = setting.Of(no)
		if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(readTrajectories(t, out)); n != 8 {
		t.Fatalf("two runs without resume left %d trajectories, want the second run's 8", n)
	}
}

func TestRolloutToParquetResumes(t *testing.T) {
	model := tinyPolicy(t)
	prompts := writePrompts(t, 4)
	out := filepath.Join(t.TempDir(), "r.parquet")
	job := tinyJob(model, prompts, out)
	job.Limit = setting.Of(2)
	if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	job.Limit = setting.Of(0)
	sum, err := quietRun(t, context.Background(), job, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.GroupsResumed != 2 || sum.GroupsWritten != 2 {
		t.Fatalf("resumed %d, wrote %d; want 2 and 2", sum.GroupsResumed, sum.GroupsWritten)
	}
	// The Parquet file holds all four groups and reads back as the JSONL run does.
	jsonl := filepath.Join(t.TempDir(), "r.jsonl")
	if _, err := quietRun(t, context.Background(), tinyJob(model, prompts, jsonl), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, tr := range readTrajectories(t, jsonl) {
		want[tr.ID] = fmt.Sprint(tr.Tokens, tr.Logprobs, tr.Reward.Total)
	}
	got := readTrajectories(t, out)
	for _, tr := range got {
		if got := fmt.Sprint(tr.Tokens, tr.Logprobs, tr.Reward.Total); got != want[tr.ID] {
			t.Errorf("%s differs between the Parquet and the JSONL run", tr.ID)
		}
	}
	if len(got) != 16 {
		t.Fatalf("parquet holds %d trajectories, want 16", len(got))
	}
}

// TestRolloutWithReferenceModel scores the policy against itself: the
// reference logprobs equal the recorded ones (KL 0) at any sampling
// temperature, because both are log-softmax(logits / T).
func TestRolloutWithReferenceModel(t *testing.T) {
	model := tinyPolicy(t)
	for _, temperature := range []float64{1, 0.7} {
		out := filepath.Join(t.TempDir(), "ref.jsonl")
		job := tinyJob(model, writePrompts(t, 2), out)
		job.RefModel = setting.Of(model)
		job.Sampling.Temperature = setting.Of(temperature)
		if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, tr := range readTrajectories(t, out) {
			if len(tr.RefLogprobs) != len(tr.Logprobs) {
				t.Fatalf("T=%v %s: %d ref logprobs for %d logprobs", temperature, tr.ID, len(tr.RefLogprobs), len(tr.Logprobs))
			}
			for i := range tr.Logprobs {
				if d := tr.Logprobs[i] - tr.RefLogprobs[i]; d > 1e-4 || d < -1e-4 {
					t.Fatalf("T=%v %s[%d]: logprob %g vs ref %g (same model)", temperature, tr.ID, i, tr.Logprobs[i], tr.RefLogprobs[i])
				}
			}
		}
	}
}

// TestRolloutRecordsTheSamplingTemperature: every trajectory carries the
// temperature its logprobs were computed at: the job's, 1 by default, and an
// explicit 0 (on the wire too) when greedy.
func TestRolloutRecordsTheSamplingTemperature(t *testing.T) {
	model := tinyPolicy(t)
	prompts := writePrompts(t, 2)
	for _, c := range []struct {
		name     string
		sampling SamplingSpec
		want     float64
	}{
		{"T=0.7", SamplingSpec{Temperature: setting.Of(0.7)}, 0.7},
		{"default", SamplingSpec{}, 1},
		{"greedy", SamplingSpec{Greedy: setting.From(true, setting.Flag), Temperature: setting.Of(0.7)}, 0},
	} {
		out := filepath.Join(t.TempDir(), "temperature.jsonl")
		job := tinyJob(model, prompts, out)
		c.sampling.MaxNewTokens = setting.Of(8)
		job.Sampling = c.sampling
		if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
			t.Fatal(err)
		}
		ts := readTrajectories(t, out)
		if len(ts) != 8 {
			t.Fatalf("%s: %d trajectories, want 8", c.name, len(ts))
		}
		for _, tr := range ts {
			if tr.Schema != traj.TrajectorySchema || tr.Temperature == nil || *tr.Temperature != c.want {
				t.Errorf("%s %s: schema %s temperature %v, want %s and %g", c.name, tr.ID, tr.Schema, tr.Temperature, traj.TrajectorySchema, c.want)
			}
		}
		if want := fmt.Sprintf(`"temperature":%g,`, c.want); !strings.Contains(string(readAll(t, out)), want) {
			t.Errorf("%s: output lacks %s", c.name, want)
		}
	}
}

// TestRolloutChatFormat runs the chat format on a real model folder whose
// template (ChatML) has no tool turns, with no tools configured.
func TestRolloutChatFormat(t *testing.T) {
	testsupport.RequireORT(t)
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	w, _ := llama.RandomWeights(cfg, 9)
	dir := filepath.Join(t.TempDir(), "chat")
	if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w}); err != nil {
		t.Fatal(err)
	}
	prompts := filepath.Join(t.TempDir(), "p.jsonl")
	os.WriteFile(prompts, []byte(`{"id":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"2+2?"}],"answer":"4"}`+"\n"), 0o644)
	out := filepath.Join(t.TempDir(), "chat.jsonl")
	job := tinyJob(dir, prompts, out)
	job.Format = setting.Of("chat")
	if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	ts := readTrajectories(t, out)
	if len(ts) != 4 {
		t.Fatalf("%d trajectories, want 4", len(ts))
	}
	// The prompt is the ChatML rendering, tokenized without a second BOS.
	want := "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"
	var b strings.Builder
	for _, id := range ts[0].Tokens[:ts[0].PromptLen] {
		switch id {
		case llama.ByteImStart:
			b.WriteString("<|im_start|>")
		case llama.ByteImEnd:
			b.WriteString("<|im_end|>")
		default:
			b.WriteByte(byte(id))
		}
	}
	if b.String() != want {
		t.Errorf("chat prompt tokens decode to %q, want %q", b.String(), want)
	}
}

// TestRolloutResponseCapOnDefaultPolicy runs the default policy (which calls
// the calculator in most samples) under a sweep of small max_tokens and
// max_new_tokens: every run ends (a call on the last allowed token, or an
// injection that fills the response, must still finish its sample), no
// response passes max_tokens, and the sweep does end samples right after an
// injected result and with the per-turn cap.
func TestRolloutResponseCapOnDefaultPolicy(t *testing.T) {
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	model := filepath.Join(root, "models", "calc")
	afterInjection, turnCapped := 0, 0
	for _, c := range []struct{ maxTokens, maxNew int }{{14, 64}, {17, 64}, {20, 64}, {23, 64}, {26, 64}, {64, 6}, {64, 9}} {
		out := filepath.Join(t.TempDir(), "caps.jsonl")
		job := Job{ID: setting.Of("caps"), Model: setting.Of(model), Prompts: setting.Of(filepath.Join(root, "data", "calc", "prompts.jsonl")), Limit: setting.Of(6),
			GroupSize: setting.Of(4), Seed: setting.Of[uint64](3), Batch: setting.Of(24), Threads: setting.Of(1), Out: setting.Of(out),
			Sampling: SamplingSpec{Temperature: setting.Of[float64](1), MaxNewTokens: setting.Of(c.maxNew)}, Limits: Limits{MaxTokens: setting.Of(c.maxTokens)}}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		_, err := quietRun(t, ctx, job, RunOptions{})
		cancel()
		if err != nil {
			t.Fatalf("max_tokens %d, max_new_tokens %d: %v", c.maxTokens, c.maxNew, err)
		}
		trs := readTrajectories(t, out)
		if len(trs) != 24 {
			t.Fatalf("max_tokens %d: %d trajectories, want 24", c.maxTokens, len(trs))
		}
		for _, tr := range trs {
			if n := len(tr.Tokens) - tr.PromptLen; n > c.maxTokens {
				t.Errorf("max_tokens %d: %s has a %d-token response", c.maxTokens, tr.ID, n)
			}
			last := tr.Segments[len(tr.Segments)-1]
			if tr.FinishReason == traj.FinishLength && last.Kind == traj.SegmentTool {
				afterInjection++
			}
			for _, seg := range tr.Segments {
				if seg.Kind == traj.SegmentModel && seg.End-seg.Start > c.maxNew {
					t.Errorf("max_new_tokens %d: %s samples %d tokens in one turn", c.maxNew, tr.ID, seg.End-seg.Start)
				}
			}
			if tr.FinishReason == traj.FinishLength && c.maxNew < 64 {
				turnCapped++
			}
		}
	}
	if afterInjection == 0 || turnCapped == 0 {
		t.Errorf("the sweep ended %d samples right after an injection and %d at the per-turn cap; want both > 0", afterInjection, turnCapped)
	}
}
