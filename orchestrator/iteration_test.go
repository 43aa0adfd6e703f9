package orchestrator

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
)

// readSink reads back every trajectory a sink holds, in order: a JSONL or
// Parquet file, or the job's groups stream.
func readSink(t *testing.T, out, job string) []traj.Trajectory {
	t.Helper()
	if ext := filepath.Ext(out); ext == ".jsonl" || ext == ".parquet" {
		return readTrajectories(t, out)
	}
	client, err := stream.Connect(context.Background(), out, stream.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	msgs, err := client.XRange(context.Background(), stream.JobKeys(job).Groups, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var ts []traj.Trajectory
	for _, m := range msgs {
		g, err := stream.DecodeGroupEntry(stream.Message{ID: m.ID, Values: m.Values})
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, g.Trajectories...)
	}
	return ts
}

// checkIterationGroups checks that ts holds, for every prompt and iteration,
// exactly one whole group whose ids, iteration and seeds are the versioned
// ones, and that a later iteration samples other tokens than iteration 0.
func checkIterationGroups(t *testing.T, ts []traj.Trajectory, job Job, prompts []string, iterations []int) {
	t.Helper()
	byGroup := map[string][]traj.Trajectory{}
	var order []string
	for _, tr := range ts {
		if _, ok := byGroup[tr.GroupID]; !ok {
			order = append(order, tr.GroupID)
		}
		byGroup[tr.GroupID] = append(byGroup[tr.GroupID], tr)
	}
	var want []string
	for _, k := range iterations {
		for _, p := range prompts {
			want = append(want, traj.GroupID(job.ID.Get(), p, k))
		}
	}
	if !slices.Equal(order, want) {
		t.Fatalf("groups in the sink %v, want each once: %v", order, want)
	}
	for _, p := range prompts {
		for _, k := range iterations {
			members := byGroup[traj.GroupID(job.ID.Get(), p, k)]
			if len(members) != job.GroupSize.Get() {
				t.Fatalf("group %s has %d trajectories, want %d (written once)", traj.GroupID(job.ID.Get(), p, k), len(members), job.GroupSize.Get())
			}
			key := p
			if k > 0 {
				key = p + "@" + strconv.Itoa(k)
			}
			for i, tr := range members {
				if tr.Iteration != k || tr.PromptID != p || tr.SampleIndex != i || tr.ID != traj.TrajectoryID(job.ID.Get(), p, k, i) {
					t.Errorf("trajectory %s: iteration %d prompt %s sample %d, want %d %s %d", tr.ID, tr.Iteration, tr.PromptID, tr.SampleIndex, k, p, i)
				}
				if want := actor.SampleSeed(job.Seed.Get(), key, i); tr.Seed != want {
					t.Errorf("trajectory %s: seed %d, want SampleSeed(job seed, %q, %d) = %d", tr.ID, tr.Seed, key, i, want)
				}
			}
		}
		first, later := byGroup[traj.GroupID(job.ID.Get(), p, 0)], byGroup[traj.GroupID(job.ID.Get(), p, iterations[len(iterations)-1])]
		same := true
		for i := range first {
			same = same && slices.Equal(first[i].Tokens, later[i].Tokens)
		}
		if same {
			t.Errorf("prompt %s: iteration %d sampled the same tokens as iteration 0", p, iterations[len(iterations)-1])
		}
	}
}

// TestIterationsOfOnePromptAreSeparateGroups runs the same job three times,
// in iterations 0, 1 and 2, into each kind of sink: every prompt becomes
// three groups (job/p, job/p@1, job/p@2), each written exactly once with its
// own seeds; running iteration 1 again writes nothing (every group is
// already there), where before a group was job/p in every iteration and
// iterations 1 and 2 were dropped as already written.
func TestIterationsOfOnePromptAreSeparateGroups(t *testing.T) {
	model := tinyPolicy(t)
	prompts := writePrompts(t, 2)
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	dir := t.TempDir()
	for _, out := range []string{filepath.Join(dir, "it.jsonl"), filepath.Join(dir, "it.parquet"), srv.URL()} {
		t.Run(filepath.Ext(out), func(t *testing.T) {
			job := tinyJob(model, prompts, out)
			for _, k := range []int{0, 1, 2} {
				sum, err := quietRun(t, context.Background(), job, RunOptions{Iteration: k})
				if err != nil {
					t.Fatal(err)
				}
				if sum.GroupsWritten != 2 || sum.GroupsResumed != 0 || sum.GroupsDuplicate != 0 {
					t.Fatalf("iteration %d: wrote %d, resumed %d, duplicates %d; want 2, 0, 0", k, sum.GroupsWritten, sum.GroupsResumed, sum.GroupsDuplicate)
				}
			}
			sum, err := quietRun(t, context.Background(), job, RunOptions{Iteration: 1})
			if err != nil {
				t.Fatal(err)
			}
			if sum.GroupsWritten != 0 || sum.GroupsResumed != 2 {
				t.Fatalf("iteration 1 again: wrote %d, resumed %d; want 0 and 2", sum.GroupsWritten, sum.GroupsResumed)
			}
			checkIterationGroups(t, readSink(t, out, job.ID.Get()), job, []string{"p00", "p01"}, []int{0, 1, 2})
		})
	}
}

// TestFedIterationsWriteEachGroupOnce feeds prompts that carry their
// iteration (the closed loop's way): one prompt in iterations 0, 1, 2 and 1
// again in one run gives three groups and one duplicate; a second run with
// iterations 1 and 3 resumes 1 and writes 3. The Parquet sink keeps the first
// run's groups across the second (it rewrites the file).
func TestFedIterationsWriteEachGroupOnce(t *testing.T) {
	model := tinyPolicy(t)
	prompts := writePrompts(t, 1)
	set, err := prompt.ReadFile(prompts, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	feed := func(iterations ...int) *prompt.List {
		f := &prompt.List{}
		for _, k := range iterations {
			p := set.Prompts[0]
			p.Iteration = k
			f.Prompts = append(f.Prompts, p)
		}
		return f
	}
	for _, ext := range []string{".jsonl", ".parquet"} {
		t.Run(ext, func(t *testing.T) {
			job := tinyJob(model, "fed", filepath.Join(t.TempDir(), "fed"+ext))
			job.Batch = setting.Of(4) // one group at a time: the repeat comes after its first is written
			sum, err := quietRun(t, context.Background(), job, RunOptions{Feed: feed(0, 1, 2, 1)})
			if err != nil {
				t.Fatal(err)
			}
			if sum.GroupsWritten != 3 || sum.GroupsDuplicate != 1 {
				t.Fatalf("wrote %d with %d duplicates, want 3 and 1", sum.GroupsWritten, sum.GroupsDuplicate)
			}
			sum, err = quietRun(t, context.Background(), job, RunOptions{Feed: feed(1, 3)})
			if err != nil {
				t.Fatal(err)
			}
			if sum.GroupsWritten != 1 || sum.GroupsResumed != 1 {
				t.Fatalf("second run: wrote %d, resumed %d; want 1 and 1", sum.GroupsWritten, sum.GroupsResumed)
			}
			checkIterationGroups(t, readSink(t, job.Out.Get(), job.ID.Get()), job, []string{"p00"}, []int{0, 1, 2, 3})
		})
	}
	// A fed prompt must name a group unambiguously.
	bad := feed(0)
	bad.Prompts[0].ID = "p00@1"
	job := tinyJob(model, "fed", filepath.Join(t.TempDir(), "bad.jsonl"))
	if _, err := quietRun(t, context.Background(), job, RunOptions{Feed: bad}); err == nil {
		t.Error("a fed prompt id with '@' was sampled")
	}
	if _, err := quietRun(t, context.Background(), job, RunOptions{Iteration: -1}); err == nil {
		t.Error("iteration -1 accepted")
	}
}

// TestResumeOfAHalfDoneIterationContinuesIt: iteration 0 is complete and a
// crash cut iteration 1 in its second group; rerunning iteration 1 keeps its
// first group, cuts the torn one, writes the rest of iteration 1 (the same
// bytes as before the crash) and nothing of other iterations.
func TestResumeOfAHalfDoneIterationContinuesIt(t *testing.T) {
	model := tinyPolicy(t)
	prompts := writePrompts(t, 3)
	out := filepath.Join(t.TempDir(), "half.jsonl")
	job := tinyJob(model, prompts, out)
	for _, k := range []int{0, 1} {
		if _, err := quietRun(t, context.Background(), job, RunOptions{Iteration: k}); err != nil {
			t.Fatal(err)
		}
	}
	full := readAll(t, out)
	lines := bytes.SplitAfter(full, []byte("\n"))
	// 3 groups of 4 lines per iteration: keep iteration 0, iteration 1's
	// first group, two lines and half a line of its second.
	crashed := bytes.Join(lines[:12+4+2], nil)
	crashed = append(crashed, lines[18][:len(lines[18])/2]...)
	if err := os.WriteFile(out, crashed, 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := quietRun(t, context.Background(), job, RunOptions{Iteration: 1})
	if err != nil {
		t.Fatal(err)
	}
	if sum.GroupsResumed != 1 || sum.GroupsWritten != 2 {
		t.Fatalf("resumed %d, wrote %d; want iteration 1's 1 and 2", sum.GroupsResumed, sum.GroupsWritten)
	}
	if got := readAll(t, out); !bytes.Equal(got, full) {
		t.Fatalf("resumed file (%d bytes) differs from the uncut one (%d bytes)", len(got), len(full))
	}
	checkIterationGroups(t, readTrajectories(t, out), job, []string{"p00", "p01", "p02"}, []int{0, 1})
	// Iteration 0 is done: rerunning it writes nothing.
	if sum, err := quietRun(t, context.Background(), job, RunOptions{Iteration: 0}); err != nil || sum.GroupsResumed != 3 || sum.GroupsWritten != 0 {
		t.Fatalf("iteration 0 again: %v, resumed %d wrote %d; want 3 and 0", err, sum.GroupsResumed, sum.GroupsWritten)
	}
}

// TestDistributedIterations enqueues the same prompts in iterations 0, 1 and
// 2 (and 1 again, which adds nothing), plus an entry written before entries
// carried an iteration (iteration 0, already done) and one with a corrupt
// iteration: workers write each of the 3 x 2 groups once to the groups stream.
func TestDistributedIterations(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	model := tinyPolicy(t)
	ctx := context.Background()
	client := srv.Client(t)
	const job = "distit"
	keys := stream.JobKeys(job)
	set, err := prompt.ReadFile(writePrompts(t, 2), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	at := func(k int) []prompt.Prompt {
		ps := slices.Clone(set.Prompts)
		for i := range ps {
			ps[i].Iteration = k
		}
		return ps
	}
	for _, c := range []struct{ iteration, added int }{{0, 2}, {1, 2}, {1, 0}, {2, 2}} {
		if n, err := prompt.Enqueue(ctx, client, job, at(c.iteration)); err != nil || n != c.added {
			t.Fatalf("enqueue iteration %d: added %d (%v), want %d", c.iteration, n, err, c.added)
		}
	}
	if members, _ := client.SMembers(ctx, keys.Queued).Result(); len(members) != 6 || !slices.Contains(members, "p00") || !slices.Contains(members, "p01@2") {
		t.Errorf("queued set %v, want p00, p01, p00@1, ..., p01@2", members)
	}
	bad := at(0)
	bad[0].ID = "p@1"
	if _, err := prompt.Enqueue(ctx, client, job, bad); err == nil {
		t.Error("enqueued a prompt id with '@'")
	}
	// An entry as the code before iterations wrote it (no iteration field):
	// iteration 0 of p00, whose group the workers write once; and a corrupt
	// iteration, dead-lettered.
	line := `{"id":"p00","prompt":"What is 0 + 0?","answer":"0"}`
	client.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Prompts, Values: []any{stream.FieldPrompt, line}})
	client.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Prompts, Values: []any{stream.FieldPrompt, line, stream.FieldIteration, "-1"}})

	feed, err := prompt.NewRedisFeed(ctx, client, prompt.RedisFeedOptions{Job: job, Consumer: "w", ClaimIdle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	jobSpec := tinyJob(model, "redis", srv.URL())
	jobSpec.ID = setting.Of(job)
	sum, err := quietRun(t, ctx, jobSpec, RunOptions{Feed: feed})
	if err != nil {
		t.Fatal(err)
	}
	if sum.GroupsWritten != 6 || feed.Stats().Corrupt != 1 {
		t.Errorf("wrote %d groups with %d dead letters, want 6 and 1", sum.GroupsWritten, feed.Stats().Corrupt)
	}
	// The old-format entry is acknowledged without a second group: as
	// redone when p00's group was written by then, else with the first
	// entry's Done (it arrived while that one was in flight).
	checkIterationGroups(t, readSink(t, srv.URL(), job), jobSpec, []string{"p00", "p01"}, []int{0, 1, 2})
	if p, _ := client.XPending(ctx, keys.Prompts, stream.ActorsGroup).Result(); p.Count != 0 {
		t.Errorf("%d prompts still pending", p.Count)
	}
	dead, _ := client.XRange(ctx, keys.Dead, "-", "+").Result()
	if len(dead) != 1 || !bytes.Contains([]byte(fmt.Sprint(dead[0].Values[stream.FieldReason])), []byte(stream.FieldIteration)) {
		t.Errorf("dead letters %v, want the entry with iteration -1, its reason naming the field", dead)
	}
}
