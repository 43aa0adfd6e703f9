package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
)

// testPoll is the policy poll interval of these tests; a feed that
// publishes a version waits longer than it before handing out the next
// prompt, so the runner's next poll is sure to see the version.
const testPoll = 20 * time.Millisecond

// lockedLog collects a run's log lines (tool goroutines log too).
type lockedLog struct{ buf testsupport.LockedBuffer }

func (l *lockedLog) Write(p []byte) (int, error) { return l.buf.Write(p) }

// lines returns the log lines that contain every part.
func (l *lockedLog) lines(parts ...string) []string {
	var out []string
	for _, line := range strings.Split(l.buf.String(), "\n") {
		ok := line != ""
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

// loggedRun runs job with its log in l.
func loggedRun(ctx context.Context, job Job, opts RunOptions, l *lockedLog) (*Summary, error) {
	opts.Logger = slog.New(slog.NewTextHandler(l, nil))
	opts.ProgressOut = &bytes.Buffer{}
	return Run(ctx, job, opts)
}

// versionFolder writes the tiny model with weights from seed and the files
// tinyPolicy adds: what a learner publishes from that base.
func versionFolder(t *testing.T, seed uint64) func(dir string) error {
	t.Helper()
	extra := tinyPolicyFiles(t)
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	w, err := llama.RandomWeights(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	return func(dir string) error {
		_, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w, ExtraFiles: extra})
		return err
	}
}

// publishVersion publishes version n of the tiny model (weights from seed
// 100+n) into s; then, when damage is set, lets it change the folder.
func publishVersion(t *testing.T, s *policystore.Store, n int64, damage func(dir string) error) policystore.Version {
	t.Helper()
	v, err := s.Publish(context.Background(), n, nil, versionFolder(t, 100+uint64(n)))
	if err != nil {
		t.Fatalf("publish version %d: %v", n, err)
	}
	if damage != nil {
		if err := damage(v.Dir); err != nil {
			t.Fatalf("damage version %d: %v", n, err)
		}
	}
	return v
}

// flipByte changes one byte in the middle of dir/name.
func flipByte(name string) func(dir string) error {
	return func(dir string) error {
		path := filepath.Join(dir, filepath.FromSlash(name))
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		data[len(data)/2] ^= 0x40
		return os.WriteFile(path, data, 0o644)
	}
}

// slowFeed hands out its first burst prompts at once, then at most one per
// gap; before(i) runs in the runner's goroutine just before prompt i is
// handed out.
type slowFeed struct {
	prompts []prompt.Prompt
	burst   int
	gap     time.Duration
	before  func(i int)
	next    int
	last    time.Time
}

func (f *slowFeed) Next(ctx context.Context, block bool) (prompt.Prompt, bool, error) {
	if f.next >= len(f.prompts) {
		return prompt.Prompt{}, false, nil
	}
	if wait := f.gap - time.Since(f.last); wait > 0 && f.next >= f.burst {
		if !block {
			return prompt.Prompt{}, false, nil
		}
		select {
		case <-ctx.Done():
			return prompt.Prompt{}, false, ctx.Err()
		case <-time.After(wait):
		}
	}
	if f.before != nil {
		f.before(f.next)
	}
	f.last = time.Now()
	f.next++
	return f.prompts[f.next-1], true, nil
}

func (f *slowFeed) Done(context.Context, prompt.Prompt) error { return nil }

func readPromptSet(t *testing.T, n int) []prompt.Prompt {
	t.Helper()
	set, err := prompt.ReadFile(writePrompts(t, n), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	return set.Prompts
}

// checkVersions checks that every group's trajectories share one
// policy_version and model, that versions never go down along the output,
// that one version has one model hash and versions differ in it, and returns
// each prompt's version.
func checkVersions(t *testing.T, ts []traj.Trajectory) map[string]int64 {
	t.Helper()
	byPrompt := map[string]int64{}
	hashOf := map[int64]string{}
	var last int64
	for i, tr := range ts {
		key := tr.GroupID
		if v, ok := byPrompt[key]; ok && v != tr.PolicyVersion {
			t.Errorf("group %s is sampled with versions %d and %d", key, v, tr.PolicyVersion)
		}
		byPrompt[key] = tr.PolicyVersion
		if tr.PolicyVersion < last {
			t.Errorf("line %d (%s): version %d after %d", i+1, tr.ID, tr.PolicyVersion, last)
		}
		last = tr.PolicyVersion
		if h, ok := hashOf[tr.PolicyVersion]; ok && h != tr.Model.Hash {
			t.Errorf("version %d has model hashes %s and %s", tr.PolicyVersion, h, tr.Model.Hash)
		}
		hashOf[tr.PolicyVersion] = tr.Model.Hash
		if want := fmt.Sprintf("v%06d", tr.PolicyVersion); tr.Model.Name != want {
			t.Errorf("%s: model name %q, want %q", tr.ID, tr.Model.Name, want)
		}
	}
	seen := map[string]int64{}
	for v, h := range hashOf {
		if w, dup := seen[h]; dup {
			t.Errorf("versions %d and %d have the same model hash", v, w)
		}
		seen[h] = v
	}
	out := map[string]int64{}
	for id, v := range byPrompt {
		out[strings.TrimPrefix(id, "t/")] = v
	}
	return out
}

// TestHotReloadMidRun publishes version 2 while a slow feed hands out
// prompts: the run starts on the base (version 0), loads version 1 before
// its first group, lets the 3 groups in flight when version 2 appears finish
// on version 1, loads version 2 for the next one, and never samples a group
// across two versions.
func TestHotReloadMidRun(t *testing.T) {
	model := tinyPolicy(t)
	storeDir := t.TempDir()
	store, err := policystore.Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	publishVersion(t, store, 1, nil)
	src, err := NewStorePolicySource(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	// Prompts 0-2 start together; version 2 appears while they are in flight.
	feed := &slowFeed{prompts: readPromptSet(t, 8), burst: 4, gap: 30 * time.Millisecond, before: func(i int) {
		if i == 3 {
			publishVersion(t, store, 2, nil)
			time.Sleep(2 * testPoll)
		}
	}}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	var logs lockedLog
	sum, err := loggedRun(context.Background(), tinyJob(model, "feed", out), RunOptions{Feed: feed, Policy: src, PolicyPoll: testPoll}, &logs)
	if err != nil {
		t.Fatal(err)
	}
	ts := readTrajectories(t, out)
	if len(ts) != 32 {
		t.Fatalf("%d trajectories, want 32", len(ts))
	}
	versions := checkVersions(t, ts)
	for i := range 8 {
		want := int64(1)
		if i >= 3 {
			want = 2
		}
		if got := versions[fmt.Sprintf("p%02d", i)]; got != want {
			t.Errorf("p%02d sampled with version %d, want %d", i, got, want)
		}
	}
	if sum.Reloads != 2 || !slices.Equal(sum.VersionsLoaded, []int64{1, 2}) || sum.PolicyVersion != 2 {
		t.Errorf("summary: %d reloads to %v, ending on %d; want 2 to [1 2], 2", sum.Reloads, sum.VersionsLoaded, sum.PolicyVersion)
	}
	if sum.ReloadMax <= 0 || sum.ReloadTime < sum.ReloadMax {
		t.Errorf("reload times: total %v, max %v", sum.ReloadTime, sum.ReloadMax)
	}
	var printed bytes.Buffer
	sum.Write(&printed)
	if !strings.Contains(printed.String(), "policy         version 2 at the end; 2 reloads (to 1, 2)") {
		t.Errorf("printed summary has no reload line:\n%s", printed.String())
	}
	if len(logs.lines("newer policy version: finishing the groups in flight", "version=2", "sequences_in_flight=12")) != 1 {
		t.Error("no log line about draining 3 groups for version 2")
	}
	t.Logf("reloads: %d, %.1f ms in all, longest %.1f ms (verify + load + engine, tiny model)",
		sum.Reloads, 1e3*sum.ReloadTime.Seconds(), 1e3*sum.ReloadMax.Seconds())
}

// TestCorruptVersionIsRefused publishes a version whose model file is
// changed after publishing (Verify fails) and one whose ONNX file is cut
// short before publishing (Verify passes, the load fails): each is refused
// once with an error naming it and the file, version 1 keeps serving, and
// the valid version 4 after them is loaded.
func TestCorruptVersionIsRefused(t *testing.T) {
	model := tinyPolicy(t)
	storeDir := t.TempDir()
	store, err := policystore.Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	publishVersion(t, store, 1, nil)
	src, err := NewStorePolicySource(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	truncated := func(t *testing.T) func(string) error {
		write := versionFolder(t, 103)
		return func(dir string) error {
			if err := write(dir); err != nil {
				return err
			}
			path := filepath.Join(dir, "onnx", "model.onnx")
			st, err := os.Stat(path)
			if err != nil {
				return err
			}
			return os.Truncate(path, st.Size()/3)
		}
	}(t)
	feed := &slowFeed{prompts: readPromptSet(t, 8), gap: 30 * time.Millisecond, before: func(i int) {
		switch i {
		case 2:
			publishVersion(t, store, 2, flipByte("onnx/model.onnx"))
		case 4:
			if _, err := store.Publish(context.Background(), 3, nil, truncated); err != nil {
				t.Errorf("publish version 3: %v", err)
			}
		case 6:
			publishVersion(t, store, 4, nil)
		default:
			return
		}
		time.Sleep(2 * testPoll)
	}}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	var logs lockedLog
	sum, err := loggedRun(context.Background(), tinyJob(model, "feed", out), RunOptions{Feed: feed, Policy: src, PolicyPoll: testPoll}, &logs)
	if err != nil {
		t.Fatal(err)
	}
	versions := checkVersions(t, readTrajectories(t, out))
	for i := range 8 {
		want := int64(1)
		if i >= 6 {
			want = 4
		}
		if got := versions[fmt.Sprintf("p%02d", i)]; got != want {
			t.Errorf("p%02d sampled with version %d, want %d", i, got, want)
		}
	}
	if !slices.Equal(sum.VersionsLoaded, []int64{1, 4}) || !slices.Equal(sum.VersionsRefused, []int64{2, 3}) {
		t.Errorf("loaded %v, refused %v; want [1 4] and [2 3]", sum.VersionsLoaded, sum.VersionsRefused)
	}
	// Each refusal is logged once (the store named version 2, then 3, for
	// many polls), with the version and the file.
	v2 := logs.lines("refused policy version", "version=2 ")
	if len(v2) != 1 || !strings.Contains(v2[0], "onnx/model.onnx has sha256") {
		t.Errorf("version 2 refusals logged: %q, want one naming onnx/model.onnx", v2)
	}
	v3 := logs.lines("refused policy version", "version=3 ")
	if len(v3) != 1 || !strings.Contains(v3[0], filepath.Join("v000003", "onnx", "model.onnx")) {
		t.Errorf("version 3 refusals logged: %q, want one naming v000003/onnx/model.onnx", v3)
	}
	var printed bytes.Buffer
	sum.Write(&printed)
	if !strings.Contains(printed.String(), "refused 2, 3 (see the log)") {
		t.Errorf("printed summary does not list the refused versions:\n%s", printed.String())
	}
}

// TestGateWaitsForMinPolicyVersion enqueues iteration 0 (any version) and
// iteration 1 with min_policy_version 2 on a real redis-server while the
// job's policy pointer names version 1: the worker samples iteration 0 with
// version 1, then waits; once version 2 is published and announced it loads
// it and samples iteration 1 with it.
func TestGateWaitsForMinPolicyVersion(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	model := tinyPolicy(t)
	ctx := context.Background()
	client := srv.Client(t)
	const job = "gate"
	keys := stream.JobKeys(job)
	storeDir := t.TempDir()
	store, err := policystore.Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	announce := func(v policystore.Version) {
		t.Helper()
		if err := stream.AnnouncePolicy(ctx, client, keys, stream.PolicyPointer{Version: v.Number, Dir: v.Dir, PublishedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	announce(publishVersion(t, store, 1, nil))

	prompts := readPromptSet(t, 2)
	gated := slices.Clone(prompts)
	for i := range gated {
		gated[i].Iteration, gated[i].MinPolicyVersion = 1, 2
	}
	for _, ps := range [][]prompt.Prompt{prompts, gated} {
		if n, err := prompt.Enqueue(ctx, client, job, ps); err != nil || n != 2 {
			t.Fatalf("enqueue: %d, %v", n, err)
		}
	}
	bad := []prompt.Prompt{prompts[0]}
	bad[0].Iteration, bad[0].MinPolicyVersion = 5, -1
	if _, err := prompt.Enqueue(ctx, client, job, bad); err == nil || !strings.Contains(err.Error(), "min policy version -1") {
		t.Errorf("enqueue of min policy version -1: %v", err)
	}
	entries, err := client.XRange(ctx, keys.Prompts, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		v, ok := e.Values[stream.FieldMinPolicyVersion]
		if i < 2 && ok || i >= 2 && v != "2" {
			t.Errorf("entry %d: %s = %v (present %v)", i, stream.FieldMinPolicyVersion, v, ok)
		}
	}
	client.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Prompts, Values: []any{stream.FieldPrompt, `{"id":"p09","prompt":"x"}`, stream.FieldMinPolicyVersion, "two"}})

	src, err := NewRedisPolicySource(client, job)
	if err != nil {
		t.Fatal(err)
	}
	feed, err := prompt.NewRedisFeed(ctx, client, prompt.RedisFeedOptions{Job: job, Consumer: "w", ClaimIdle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	jobSpec := tinyJob(model, "redis", srv.URL())
	jobSpec.ID = setting.Of(job)
	type result struct {
		sum *Summary
		err error
	}
	done := make(chan result, 1)
	var logs lockedLog
	go func() {
		sum, err := loggedRun(ctx, jobSpec, RunOptions{Feed: feed, Policy: src, PolicyPoll: testPoll}, &logs)
		done <- result{sum, err}
	}()
	waitGroups := func(n int64) {
		t.Helper()
		waitStreamLen(t, ctx, client, keys.Groups, n, func() error {
			select {
			case r := <-done:
				return fmt.Errorf("run ended: %v", r.err)
			default:
				return nil
			}
		})
	}
	waitGroups(2)
	time.Sleep(300 * time.Millisecond)
	if n, _ := client.XLen(ctx, keys.Groups).Result(); n != 2 {
		t.Fatalf("%d groups written while the pointer names version 1, want 2 (iteration 0 only)", n)
	}
	select {
	case r := <-done:
		t.Fatalf("run ended while gated prompts wait: %v", r.err)
	default:
	}
	if len(logs.lines("prompt needs a newer policy: waiting for it", "min_policy_version=2")) != 1 {
		t.Errorf("no single log line about the gated prompt waiting")
	}
	announce(publishVersion(t, store, 2, nil))
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	ts := readSink(t, srv.URL(), job)
	versions := map[string]int64{}
	for _, tr := range ts {
		versions[tr.GroupID] = tr.PolicyVersion
	}
	want := map[string]int64{"gate/p00": 1, "gate/p01": 1, "gate/p00@1": 2, "gate/p01@1": 2}
	if fmt.Sprint(versions) != fmt.Sprint(want) {
		t.Errorf("group versions %v, want %v", versions, want)
	}
	if !slices.Equal(r.sum.VersionsLoaded, []int64{1, 2}) || feed.Stats().Corrupt != 1 {
		t.Errorf("loaded %v with %d dead letters, want [1 2] and 1 (min_policy_version \"two\")", r.sum.VersionsLoaded, feed.Stats().Corrupt)
	}

	// Without a policy source, a prompt that needs a newer version than the
	// job's is an error, not a wait.
	p := prompts[0]
	p.MinPolicyVersion = 1
	_, err = quietRun(t, ctx, tinyJob(model, "feed", filepath.Join(t.TempDir(), "o.jsonl")), RunOptions{Feed: &slowFeed{prompts: []prompt.Prompt{p}}})
	if err == nil || !strings.Contains(err.Error(), "needs policy version ≥ 1") {
		t.Errorf("gated prompt without a source: %v", err)
	}
}

// TestFollowingWorkerWaitsForNewEntries runs a Follow worker: it keeps
// running after the stream drains, samples entries enqueued later (the next
// iteration), and returns when its ctx is cancelled.
func TestFollowingWorkerWaitsForNewEntries(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	model := tinyPolicy(t)
	ctx := context.Background()
	client := srv.Client(t)
	const job = "follow"
	keys := stream.JobKeys(job)
	prompts := readPromptSet(t, 2)
	if _, err := prompt.Enqueue(ctx, client, job, prompts); err != nil {
		t.Fatal(err)
	}
	feed, err := prompt.NewRedisFeed(ctx, client, prompt.RedisFeedOptions{Job: job, Consumer: "w", Follow: true, Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	jobSpec := tinyJob(model, "redis", srv.URL())
	jobSpec.ID = setting.Of(job)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	type result struct {
		sum *Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := quietRun(t, runCtx, jobSpec, RunOptions{Feed: feed})
		done <- result{sum, err}
	}()
	waitGroups := func(n int64) {
		t.Helper()
		waitStreamLen(t, ctx, client, keys.Groups, n, func() error {
			select {
			case r := <-done:
				return fmt.Errorf("worker ended: %v", r.err)
			default:
				return nil
			}
		})
	}
	waitGroups(2)
	time.Sleep(300 * time.Millisecond) // drained: a worker without Follow exits here
	next := slices.Clone(prompts)
	for i := range next {
		next[i].Iteration = 1
	}
	if _, err := prompt.Enqueue(ctx, client, job, next); err != nil {
		t.Fatal(err)
	}
	waitGroups(4)
	stop()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.sum.GroupsWritten != 4 || !r.sum.Interrupted {
		t.Errorf("summary: %d groups, interrupted %v; want 4, true", r.sum.GroupsWritten, r.sum.Interrupted)
	}
	if p, _ := client.XPending(ctx, keys.Prompts, stream.ActorsGroup).Result(); p.Count != 0 {
		t.Errorf("%d prompts still pending", p.Count)
	}
}

// waitStreamLen waits up to 60 s for stream to hold n entries, failing the
// test when stopped reports that the run producing them ended first.
func waitStreamLen(t *testing.T, ctx context.Context, client goredis.UniversalClient, stream string, n int64, stopped func() error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if got, _ := client.XLen(ctx, stream).Result(); got >= n {
			return
		}
		if err := stopped(); err != nil {
			t.Fatalf("%v before %s held %d entries", err, stream, n)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s held fewer than %d entries after 60 s", stream, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// OpenPolicySource reads a --watch value: none, the Redis pointer (which
// needs a client), or a store folder; what names no usable source is a
// *WatchError naming the value.
func TestOpenPolicySource(t *testing.T) {
	if src, err := OpenPolicySource("", nil, "j"); src != nil || err != nil {
		t.Errorf("no --watch: %v, %v", src, err)
	}
	var we *WatchError
	if _, err := OpenPolicySource(WatchRedis, nil, "j"); !errors.As(err, &we) || !strings.Contains(err.Error(), "--watch redis needs --redis") {
		t.Errorf("redis without a client: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "nowhere")
	if _, err := OpenPolicySource(missing, nil, "j"); !errors.As(err, &we) || !strings.Contains(err.Error(), "--watch "+missing) {
		t.Errorf("missing store: %v", err)
	}
}
