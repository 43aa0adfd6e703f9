package orchestrator

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/stream"
)

// tinyContext is the tiny model's max_position_embeddings (model/llama's
// "tiny" shape).
const tinyContext = 2048

// refusedReason is the reason a refused prompt carries, in the log and in
// its dead letter.
var refusedReason = regexp.MustCompile(`^prompt (\d+) tokens, context 2048$`)

// promptsWithLong writes n good prompts (writePrompts' lines) with, after the
// second, a well-formed prompt "long" whose tokens pass the tiny model's
// context.
func promptsWithLong(t *testing.T, n int) string {
	t.Helper()
	good, err := os.ReadFile(writePrompts(t, n))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(good)), "\n")
	long := fmt.Sprintf(`{"id":"long","prompt":"What is %s1?","answer":"%d"}`, strings.Repeat("1 + ", tinyContext), tinyContext+1)
	lines = append(lines[:2], append([]string{long + "\n"}, lines[2:]...)...)
	path := filepath.Join(t.TempDir(), "prompts.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOverLongPromptIsRefusedAlone: a prompt longer than the model's context
// among good ones used to abort the whole job (and every resume, at the same
// prompt). It is refused alone, counted and logged with its id and reason;
// the job writes every good group, and a resume refuses it again without
// failing.
func TestOverLongPromptIsRefusedAlone(t *testing.T) {
	model := tinyPolicy(t)
	out := filepath.Join(t.TempDir(), "r.jsonl")
	job := tinyJob(model, promptsWithLong(t, 4), out)
	job.SkipInvalid = setting.Of(true)
	var log lockedLog
	sum, err := loggedRun(context.Background(), job, RunOptions{}, &log)
	if err != nil {
		t.Fatalf("a job with one over-long prompt failed: %v", err)
	}
	if sum.PromptsTotal != 5 || sum.GroupsWritten != 4 || sum.PromptsRefused != 1 {
		t.Errorf("read %d, wrote %d groups, refused %d; want 5, 4 and 1", sum.PromptsTotal, sum.GroupsWritten, sum.PromptsRefused)
	}
	lines := log.lines("refused prompt", "prompt=long", "line=3")
	if len(lines) != 1 || !regexp.MustCompile(`reason="prompt \d+ tokens, context 2048"`).MatchString(lines[0]) {
		t.Errorf("log lines for the refusal: %q, want one with the id, line and reason", lines)
	}
	count := map[string]int{}
	for _, tr := range readTrajectories(t, out) {
		count[tr.PromptID]++
	}
	if len(count) != 4 || count["long"] != 0 {
		t.Errorf("trajectories by prompt %v, want the 4 good prompts' groups only", count)
	}
	var text bytes.Buffer
	sum.Write(&text)
	if !strings.Contains(text.String(), "refused        1 prompts longer than the model's context") {
		t.Errorf("summary does not report the refusal:\n%s", text.String())
	}

	// A resume refuses it again instead of aborting at it.
	sum, err = quietRun(t, context.Background(), job, RunOptions{})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if sum.GroupsResumed != 4 || sum.GroupsWritten != 0 || sum.PromptsRefused != 1 {
		t.Errorf("resume: %d resumed, %d written, %d refused; want 4, 0 and 1", sum.GroupsResumed, sum.GroupsWritten, sum.PromptsRefused)
	}
}

// TestDistributedWorkerRefusesOverLongPromptAlone: an over-long prompt in a
// worker's batch used to kill every worker that claimed it, until the
// delivery limit dead-lettered it with the good prompts of its batch. Now
// only its entry is dead-lettered, with the reason, and the worker writes
// every good group once.
func TestDistributedWorkerRefusesOverLongPromptAlone(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	model := tinyPolicy(t)
	ctx := context.Background()
	client := srv.Client(t)
	const job = "refuse"
	keys := stream.JobKeys(job)
	set, err := prompt.ReadFile(promptsWithLong(t, 5), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := prompt.Enqueue(ctx, client, job, set.Prompts); err != nil || n != 6 {
		t.Fatalf("enqueue: %d, %v", n, err)
	}
	feed, err := prompt.NewRedisFeed(ctx, client, prompt.RedisFeedOptions{Job: job, Consumer: "w"})
	if err != nil {
		t.Fatal(err)
	}
	spec := tinyJob(model, "redis", srv.URL())
	spec.ID = setting.Of(job)
	sum, err := quietRun(t, ctx, spec, RunOptions{Feed: feed})
	if err != nil {
		t.Fatalf("the worker failed on the over-long prompt: %v", err)
	}

	entries, err := client.XRange(ctx, keys.Groups, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range entries {
		seen[fmt.Sprint(e.Values[stream.FieldGroupID])]++
	}
	if len(entries) != 5 || len(seen) != 5 || seen[job+"/long"] != 0 {
		t.Errorf("groups stream holds %d entries for groups %v, want the 5 good groups once each", len(entries), seen)
	}
	dead, err := client.XRange(ctx, keys.Dead, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 {
		t.Fatalf("dead letters %v, want the over-long prompt's entry only", dead)
	}
	reason, _ := dead[0].Values[stream.FieldReason].(string)
	body, _ := dead[0].Values["field:"+stream.FieldPrompt].(string)
	if !refusedReason.MatchString(reason) || !strings.Contains(body, `"id":"long"`) {
		t.Errorf("dead letter: reason %q, prompt %.60q; want the refusal of prompt long", reason, body)
	}
	if p, _ := client.XPending(ctx, keys.Prompts, stream.ActorsGroup).Result(); p.Count != 0 {
		t.Errorf("%d prompts still pending", p.Count)
	}

	// The worker's summary says what it did (it used to read "0 read").
	want := prompt.FeedStats{Claimed: 6, Done: 5, Refused: 1}
	if sum.Worker == nil || *sum.Worker != want || sum.PromptsTotal != 6 || sum.PromptsRefused != 1 || sum.GroupsWritten != 5 {
		t.Errorf("worker summary: %+v, %d read, %d refused, %d written; want %+v, 6, 1 and 5",
			sum.Worker, sum.PromptsTotal, sum.PromptsRefused, sum.GroupsWritten, want)
	}
	var text bytes.Buffer
	sum.Write(&text)
	for _, line := range []string{"prompts        6 read", "worker         6 prompt entries claimed (0 reclaimed from idle workers); 5 done",
		"dead-lettered: 1 refused, 0 corrupt, 0 over the delivery limit"} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("worker summary lacks %q:\n%s", line, text.String())
		}
	}
}

// outageFeed kills the Redis server once the feed has handed out `after`
// prompts, and tells the test, which restarts it a few seconds later.
type outageFeed struct {
	*prompt.RedisFeed
	srv    *testsupport.Redis
	after  int
	handed int
	killed chan struct{}
}

func (f *outageFeed) Next(ctx context.Context, block bool) (prompt.Prompt, bool, error) {
	p, ok, err := f.RedisFeed.Next(ctx, block)
	if ok {
		f.handed++
		if f.handed == f.after {
			f.srv.Kill()
			close(f.killed)
		}
	}
	return p, ok, err
}

// TestWorkerSurvivesRedisRestart stops the server for 3 s while a worker
// has prompts in flight and more to claim (AOF on, so the stream and the
// written-group set survive): the feed retries its reads and acks as the
// sink retries its writes, and the worker finishes the job with each group
// written once. It used to exit on the feed's first failed read.
func TestWorkerSurvivesRedisRestart(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{AOF: true})
	model := tinyPolicy(t)
	ctx := context.Background()
	client := srv.Client(t)
	const job = "restart"
	keys := stream.JobKeys(job)
	set, err := prompt.ReadFile(writePrompts(t, 8), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt.Enqueue(ctx, client, job, set.Prompts); err != nil {
		t.Fatal(err)
	}
	rf, err := prompt.NewRedisFeed(ctx, client, prompt.RedisFeedOptions{Job: job, Consumer: "w", Retry: stream.Retry{For: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	feed := &outageFeed{RedisFeed: rf, srv: srv, after: 3, killed: make(chan struct{})}
	spec := tinyJob(model, "redis", srv.URL())
	spec.ID = setting.Of(job)
	type result struct {
		sum *Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := quietRun(t, ctx, spec, RunOptions{Feed: feed})
		done <- result{sum, err}
	}()
	select {
	case <-feed.killed:
	case res := <-done:
		t.Fatalf("the run ended before the outage: %v", res.err)
	}
	time.Sleep(3 * time.Second)
	srv.Restart(t)
	res := <-done
	if res.err != nil {
		t.Fatalf("the worker did not survive a 3 s restart: %v", res.err)
	}
	entries, err := client.XRange(ctx, keys.Groups, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range entries {
		seen[fmt.Sprint(e.Values[stream.FieldGroupID])]++
	}
	if len(entries) != 8 || len(seen) != 8 {
		t.Errorf("groups stream holds %d entries for %d groups, want 8 and 8: %v", len(entries), len(seen), seen)
	}
	if p, _ := client.XPending(ctx, keys.Prompts, stream.ActorsGroup).Result(); p.Count != 0 {
		t.Errorf("%d prompts still pending", p.Count)
	}
}

// TestWorkerProgressHasNoTotal: a worker's progress lines used to say
// "of=0"; with no total known (-1) they leave it out.
func TestWorkerProgressHasNoTotal(t *testing.T) {
	var log lockedLog
	p := NewProgress(&bytes.Buffer{}, -1, slog.New(slog.NewTextHandler(&log, nil))).(*logProgress)
	p.every = 0
	p.Advance(1, 4, 10)
	if lines := log.lines("rollout progress", "groups=1"); len(lines) != 1 || strings.Contains(lines[0], "of=") {
		t.Errorf("progress lines %q, want one without of=", lines)
	}
}
