package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/trainer"
	"github.com/toolrl/toolrl/traj"
)

// The small loop of these tests: 3 iterations of 8 RL prompts × G=4 on
// models/calc, evaluated on 8 held-out prompts × 2 after every iteration.
const (
	smallIterations   = 3
	smallPerIteration = 8
	smallGroupSize    = 4
	smallMaxNewTokens = 48
)

// writeTrainConfig writes the small loop's config into dir (out: dir/out)
// and returns its path.
func writeTrainConfig(t *testing.T, dir, job string, maxStaleness int) string {
	t.Helper()
	root := testsupport.RepoRoot(t)
	cfg := fmt.Sprintf(`rollout:
  job: %s
  model: %s
  prompts: %s
  group_size: %d
  seed: 1
  sampling:
    temperature: 1.0
    max_new_tokens: %d
  limits:
    max_tokens: 96
  batch: 32
learner:
  lr: 1.0e-3
  max_staleness: %d
iterations: %d
prompts_per_iteration: %d
iteration_timeout: 90s
eval:
  prompts: %s
  limit: 8
  group_size: 2
  seed: 7
out: out
`, job, filepath.Join(root, "models", "calc"), filepath.Join(root, "data", "calc", "rl.jsonl"), smallGroupSize, smallMaxNewTokens,
		maxStaleness, smallIterations, smallPerIteration, filepath.Join(root, "data", "calc", "prompts.jsonl"))
	path := filepath.Join(dir, "train.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// toolrlProc is a toolrl subprocess of one test; the test's cleanup kills
// it if it is still running.
type toolrlProc struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr testsupport.LockedBuffer
	exited         chan struct{}
	err            error // the exit, once exited is closed
}

func startToolrlProc(t *testing.T, bin, name string, args ...string) *toolrlProc {
	t.Helper()
	p := &toolrlProc{name: name, cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if !p.done() {
			_ = p.cmd.Process.Kill()
		}
		<-p.exited
		if t.Failed() {
			t.Logf("%s (%s)\nstdout:\n%s\nstderr:\n%s", p.name, p.cmd.ProcessState, p.stdout.String(), tail(p.stderr.String(), 4000))
		}
	})
	return p
}

func (p *toolrlProc) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// wait waits up to d for the process to exit and returns its exit code
// (-1: still running after d, killed).
func (p *toolrlProc) wait(d time.Duration) int {
	select {
	case <-p.exited:
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return -1
	}
	var exit *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &exit):
		return exit.ExitCode()
	default:
		return -1
	}
}

// kill SIGKILLs the process and waits for it.
func (p *toolrlProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// consumer is the name the process's Redis consumers have (host-pid).
func (p *toolrlProc) consumer() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, p.cmd.Process.Pid)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// countLines returns the number of complete lines in path (0 if missing).
func countLines(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(data, []byte("\n"))
}

// latestVersion is the latest version in the policy store at storeDir
// (opened read-only for the call); the zero Version (Number 0) when it has
// none yet.
func latestVersion(t *testing.T, storeDir string) policystore.Version {
	t.Helper()
	s, err := policystore.OpenReadOnly(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := s.Latest()
	if errors.Is(err, policystore.ErrNoVersion) {
		return policystore.Version{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTrainDistributedSurvivesKills runs a distributed `toolrl train
// --redis` on a real redis-server with every part a process of the built
// binary: the driver, two rollout workers (--worker --follow --watch redis)
// and an advantage service. During iteration 2 the worker holding that
// iteration's prompts is SIGKILLed (a replacement worker starts), then the
// advantage service is SIGKILLed while it holds groups of the iteration
// (stopped with SIGSTOP when XPENDING shows some, or at the latest once the
// iteration's groups are written) and replaced; --claim-idle 2s hands their
// work to the others. The driver
// must finish the 3 iterations with exit 0, and the streams and the store
// must show that every expected group (job/prompt@k of the prompts the
// driver enqueued) was sampled once with one policy version, scored once (G
// records), and trained exactly once, into the version of its iteration,
// with no record older than max_staleness; versions 1, 2, 3, the pointer at
// 3.
func TestTrainDistributedSurvivesKills(t *testing.T) {
	testsupport.RequireORT(t)
	bin := toolrlBinary(t, "builds the binary; runs five processes")
	const job = "train-kill"
	// Strictly on-policy: the gate makes iteration k wait for version k-1,
	// so a worker that sampled with an older version shows as staleness.
	const maxStale = 0
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := srv.Client(t)
	ctx := context.Background()
	keys := stream.JobKeys(job)
	root := testsupport.RepoRoot(t)
	dir := t.TempDir()
	cfgPath := writeTrainConfig(t, dir, job, maxStale)
	out := filepath.Join(dir, "out")
	start := time.Now()

	service := func(name string) *toolrlProc {
		return startToolrlProc(t, bin, name, "advantage", "serve", "--redis", srv.URL(), "--job", job, "--listen", "", "--claim-idle", "2s")
	}
	worker := func(name string) *toolrlProc {
		return startToolrlProc(t, bin, name, "rollout", "--model", filepath.Join(root, "models", "calc"), "--redis", srv.URL(),
			"--job", job, "--worker", "--follow", "--watch", "redis", "--group-size", strconv.Itoa(smallGroupSize),
			"--max-new-tokens", strconv.Itoa(smallMaxNewTokens), "--seed", "1", "--batch", "32", "--threads", "1", "--claim-idle", "2s")
	}
	svc := service("advantage service 1")
	workers := []*toolrlProc{worker("worker 1"), worker("worker 2")}
	driver := startToolrlProc(t, bin, "driver", "train", "--config", cfgPath, "--redis", srv.URL())

	// poll checks cond every interval until it holds, failing if the driver
	// exits first or after 60 s.
	poll := func(what string, every time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if driver.done() {
				t.Fatalf("the driver exited (%v) while waiting for %s", driver.err, what)
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s after 60 s", what)
			}
			time.Sleep(every)
		}
	}
	// Iteration 2 begins when its prompts are enqueued (after version 1 is
	// announced); kill the worker that took them while it holds them.
	poll("iteration 2's prompts", time.Millisecond, func() bool {
		n, _ := client.XLen(ctx, keys.Prompts).Result()
		return n >= 2*smallPerIteration
	})
	entries, err := client.XRange(ctx, keys.Prompts, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	firstOfIteration2 := entries[smallPerIteration].ID
	var victim *toolrlProc
	var held int
	poll("a worker holding iteration 2's prompts", time.Millisecond, func() bool {
		pending, err := client.XPendingExt(ctx, &goredis.XPendingExtArgs{
			Stream: keys.Prompts, Group: stream.ActorsGroup, Start: firstOfIteration2, End: "+", Count: 100,
		}).Result()
		if err != nil {
			return false
		}
		for _, w := range workers {
			held = 0
			for _, p := range pending {
				if p.Consumer == w.consumer() {
					held++
				}
			}
			if held > 0 {
				victim = w
				return true
			}
		}
		return false
	})
	victim.kill()
	t.Logf("%.1fs: SIGKILLed %s holding %d of iteration 2's prompts; a replacement worker starts", time.Since(start).Seconds(), victim.name, held)
	workers = append(workers, worker("worker 3 (replacement)"))
	// Catch the service with groups in hand: stop it when it has some
	// pending, kill it if it still has them (else let it go on and watch
	// the next group), at the latest once iteration 2's groups are written.
	svcPending := func() int64 {
		p, err := client.XPending(ctx, keys.Groups, stream.AdvantageGroup).Result()
		if err != nil {
			return 0
		}
		var n int64
		for name, c := range p.Consumers {
			if strings.HasPrefix(name, svc.consumer()+"-") {
				n += c
			}
		}
		return n
	}
	poll("iteration 2's groups", 0, func() bool {
		if svcPending() > 0 {
			_ = svc.cmd.Process.Signal(syscall.SIGSTOP)
			if svcPending() > 0 {
				return true
			}
			_ = svc.cmd.Process.Signal(syscall.SIGCONT)
		}
		n, _ := client.XLen(ctx, keys.Groups).Result()
		return n >= 2*smallPerIteration
	})
	svc.kill()
	t.Logf("%.1fs: SIGKILLed the advantage service with %d groups pending; a replacement starts", time.Since(start).Seconds(), svcPending())
	service("advantage service 2 (replacement)")

	if code := driver.wait(100 * time.Second); code != 0 {
		t.Fatalf("driver: exit %d, want 0", code)
	}
	t.Logf("%.1fs: the driver finished:\n%s", time.Since(start).Seconds(), driver.stdout.String())
	if s := driver.stdout.String(); !strings.Contains(s, "iterations 1-3") || !strings.Contains(s, "latest policy version 3") {
		t.Errorf("driver summary does not say iterations 1-3 and version 3:\n%s", s)
	}

	// The groups the driver expected: the prompts it enqueued, 8 per
	// iteration, each gated on the version before its iteration.
	entries, err = client.XRange(ctx, keys.Prompts, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	iterationOf := map[string]int{} // expected group id -> iteration
	for _, e := range entries {
		var p prompt.Prompt
		if err := json.Unmarshal([]byte(e.Values[stream.FieldPrompt].(string)), &p); err != nil {
			t.Fatalf("prompt entry %s: %v", e.ID, err)
		}
		k, err := strconv.Atoi(e.Values[stream.FieldIteration].(string))
		if err != nil {
			t.Fatalf("prompt entry %s: iteration: %v", e.ID, err)
		}
		gid := traj.GroupID(job, p.ID, k)
		if _, dup := iterationOf[gid]; dup {
			t.Errorf("group %s enqueued twice", gid)
		}
		iterationOf[gid] = k
		wantMin := max(0, int64(k-1-maxStale))
		if got, _ := e.Values[stream.FieldMinPolicyVersion].(string); wantMin > 0 && got != strconv.FormatInt(wantMin, 10) {
			t.Errorf("prompt entry %s (iteration %d): min_policy_version %q, want %d", e.ID, k, got, wantMin)
		}
	}
	perIteration := map[int]int{}
	for _, k := range iterationOf {
		perIteration[k]++
	}
	if len(iterationOf) != smallIterations*smallPerIteration || perIteration[1] != 8 || perIteration[2] != 8 || perIteration[3] != 8 {
		t.Fatalf("%d groups enqueued, by iteration %v; want 8 in each of iterations 1-3", len(iterationOf), perIteration)
	}
	if n, _ := client.XLen(ctx, keys.Dead).Result(); n != 0 {
		dead, _ := client.XRange(ctx, keys.Dead, "-", "+").Result()
		t.Errorf("%d dead letters: %v", n, dead)
	}

	// Sampled once each, by one policy version, the one before its iteration.
	groupEntries, err := client.XRange(ctx, keys.Groups, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	sampled := map[string]int64{}
	for _, e := range groupEntries {
		g, err := stream.DecodeGroupEntry(stream.Message{ID: e.ID, Values: e.Values})
		if err != nil {
			t.Fatalf("groups entry %s: %v", e.ID, err)
		}
		k, ok := iterationOf[g.GroupID]
		if !ok {
			t.Errorf("groups stream: unexpected group %s", g.GroupID)
			continue
		}
		if _, dup := sampled[g.GroupID]; dup {
			t.Errorf("group %s written twice", g.GroupID)
		}
		versions := map[int64]int{}
		for _, tr := range g.Trajectories {
			versions[tr.PolicyVersion]++
		}
		if len(versions) != 1 || len(g.Trajectories) != smallGroupSize {
			t.Errorf("group %s: %d trajectories by policy version %v, want %d of one version", g.GroupID, len(g.Trajectories), versions, smallGroupSize)
		}
		v := g.Trajectories[0].PolicyVersion
		sampled[g.GroupID] = v
		if v > int64(k-1) || v < int64(k-1-maxStale) {
			t.Errorf("group %s of iteration %d sampled with version %d, want %d..%d", g.GroupID, k, v, max(0, k-1-maxStale), k-1)
		}
	}
	if len(sampled) != len(iterationOf) {
		t.Errorf("%d groups written, want %d", len(sampled), len(iterationOf))
	}

	// Scored once each: G records per group, no trajectory twice.
	recEntries, err := client.XRange(ctx, keys.Advantages, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]*traj.AdvantageRecord{} // entry id -> record
	scored := map[string]int{}
	trajectories := map[string]bool{}
	for _, e := range recEntries {
		rec, err := stream.DecodeRecordEntry(stream.Message{ID: e.ID, Values: e.Values})
		if err != nil {
			t.Fatalf("advantages entry %s: %v", e.ID, err)
		}
		records[e.ID] = rec
		scored[rec.GroupID]++
		if trajectories[rec.TrajectoryID] {
			t.Errorf("trajectory %s scored twice", rec.TrajectoryID)
		}
		trajectories[rec.TrajectoryID] = true
	}
	for gid := range iterationOf {
		if scored[gid] != smallGroupSize {
			t.Errorf("group %s: %d records in the advantages stream, want %d", gid, scored[gid], smallGroupSize)
		}
	}
	if len(recEntries) != smallGroupSize*len(iterationOf) {
		t.Errorf("%d records in the advantages stream, want %d", len(recEntries), smallGroupSize*len(iterationOf))
	}
	if n, _ := client.SCard(ctx, keys.GroupsDone).Result(); n != int64(len(iterationOf)) {
		t.Errorf("%d groups marked done, want %d", n, len(iterationOf))
	}

	// Trained exactly once: the versions' Consumed lists partition the
	// records; version k trained iteration k's groups, none stale.
	store, err := policystore.OpenReadOnly(filepath.Join(out, trainer.PolicyDir))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	latest, err := store.Latest()
	if err != nil || latest.Number != smallIterations {
		t.Fatalf("store latest: %+v, %v; want version %d", latest, err, smallIterations)
	}
	trained := map[string]int64{} // entry id -> version
	trainedPerGroup := map[string][]int{}
	for n := int64(1); n <= smallIterations; n++ {
		v, err := store.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		st, err := learner.ReadState(v)
		if err != nil {
			t.Fatal(err)
		}
		if st.Version != n || st.Iteration != int(n) || st.Records != len(st.Consumed) {
			t.Errorf("version %d: state version %d, iteration %d, %d records for %d consumed entries", n, st.Version, st.Iteration, st.Records, len(st.Consumed))
		}
		for _, id := range st.Consumed {
			if prev, dup := trained[id]; dup {
				t.Errorf("entry %s trained into versions %d and %d", id, prev, n)
				continue
			}
			trained[id] = n
			rec, ok := records[id]
			if !ok {
				t.Errorf("version %d consumed entry %s, not in the advantages stream", n, id)
				continue
			}
			if k := iterationOf[rec.GroupID]; k != int(n) {
				t.Errorf("version %d trained record %s of iteration %d", n, rec.TrajectoryID, k)
			}
			if rec.PolicyVersion > n-1 || rec.PolicyVersion < n-1-maxStale {
				t.Errorf("version %d trained record %s of policy version %d: staleness %d, max %d", n, rec.TrajectoryID, rec.PolicyVersion, n-1-rec.PolicyVersion, maxStale)
			}
			trainedPerGroup[rec.GroupID] = append(trainedPerGroup[rec.GroupID], rec.SampleIndex)
		}
	}
	var allSamples []int
	for i := range smallGroupSize {
		allSamples = append(allSamples, i)
	}
	for gid := range iterationOf {
		idx := slices.Sorted(slices.Values(trainedPerGroup[gid]))
		if want := allSamples; !slices.Equal(idx, want) {
			t.Errorf("group %s: trained samples %v, want %v", gid, idx, want)
		}
	}
	if len(trained) != smallGroupSize*len(iterationOf) {
		t.Errorf("%d records trained, want %d", len(trained), smallGroupSize*len(iterationOf))
	}
	ptr, found, err := stream.ReadPolicy(ctx, client, keys)
	if err != nil || !found || ptr.Version != smallIterations || filepath.Clean(ptr.Dir) != filepath.Clean(latest.Dir) {
		t.Errorf("policy pointer %+v (found %v, %v), want version %d at %s", ptr, found, err, smallIterations, latest.Dir)
	}

	// The driver's figures agree.
	ms := testsupport.ReadJSONLines[trainer.IterationMetrics](t, filepath.Join(out, trainer.MetricsFile))
	if len(ms) != smallIterations {
		t.Fatalf("%d metrics lines, want %d", len(ms), smallIterations)
	}
	for i, m := range ms {
		k := i + 1
		if m.Iteration != k || m.RolloutVersion != int64(k-1) || m.PublishedVersion != int64(k) {
			t.Errorf("metrics line %d: iteration %d, versions %d -> %d", i, m.Iteration, m.RolloutVersion, m.PublishedVersion)
		}
		if m.Rollout.Groups != smallPerIteration || m.Advantage.Groups != smallPerIteration || m.Advantage.Records != smallPerIteration*smallGroupSize || m.Advantage.Dropped != 0 {
			t.Errorf("iteration %d: rollout %+v, advantage %+v", k, m.Rollout, m.Advantage)
		}
		if m.Learner.Dropped != 0 || m.Learner.TokensTrained == 0 {
			t.Errorf("iteration %d: learner dropped %d stale records, trained %d tokens", k, m.Learner.Dropped, m.Learner.TokensTrained)
		}
		for lag := range m.Learner.Staleness {
			if n, err := strconv.Atoi(lag); err != nil || n < 0 || n > maxStale {
				t.Errorf("iteration %d: learner staleness %v, want keys 0..%d", k, m.Learner.Staleness, maxStale)
			}
		}
		t.Logf("iteration %d: rollout wait %.1fs, learn %.1fs, total %.1fs", k, m.Seconds.Rollout, m.Seconds.Learn, m.Seconds.Total)
	}
	if n := countLines(filepath.Join(out, trainer.EvalFile)); n != smallIterations+1 {
		t.Errorf("%d eval lines, want %d", n, smallIterations+1)
	}
	for _, w := range workers {
		if !w.done() {
			_ = w.cmd.Process.Signal(syscall.SIGINT)
		}
	}
	for _, w := range workers {
		w.wait(20 * time.Second)
		for _, line := range strings.Split(w.stdout.String(), "\n") {
			if strings.Contains(line, "policy ") || strings.Contains(line, "groups ") {
				t.Logf("%s: %s", w.name, strings.TrimSpace(line))
			}
		}
	}
}

// TestTrainSecondSignalAbandons: a driver waiting on workers that never come
// (none was started) says it is stopping on the first SIGINT and keeps
// waiting for its iteration; a second SIGINT makes it return at once with
// exit 130, saying the iteration in progress is lost (interrupt.Start's
// onSecond, not an os.Exit from a goroutine).
func TestTrainSecondSignalAbandons(t *testing.T) {
	testsupport.RequireORT(t)
	bin := toolrlBinary(t, "builds the binary")
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	dir := t.TempDir()
	cfgPath := writeTrainConfig(t, dir, "abandon", 1)
	p := startToolrlProc(t, bin, "driver", "train", "--config", cfgPath, "--redis", srv.URL())
	waitFor := func(what string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(p.stderr.String(), what) {
			if p.done() {
				t.Fatalf("train exited (%v) before saying %q:\n%s", p.err, what, tail(p.stderr.String(), 2000))
			}
			if time.Now().After(deadline) {
				t.Fatalf("train did not say %q within 60 s:\n%s", what, tail(p.stderr.String(), 2000))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Signal once iteration 1's prompts are enqueued: the driver then waits
	// for records no worker will write.
	client := srv.Client(t)
	prompts := stream.JobKeys("abandon").Prompts
	deadline := time.Now().Add(60 * time.Second)
	for n, _ := client.XLen(context.Background(), prompts).Result(); n == 0; n, _ = client.XLen(context.Background(), prompts).Result() {
		if p.done() || time.Now().After(deadline) {
			t.Fatalf("no prompts enqueued (train exited: %v):\n%s", p.done(), tail(p.stderr.String(), 2000))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor("Ctrl-C again to abandon it")
	time.Sleep(200 * time.Millisecond)
	if p.done() {
		t.Fatalf("train exited on the first signal with no worker to finish its iteration:\n%s", tail(p.stderr.String(), 2000))
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(30 * time.Second); code != exitInterrupted {
		t.Fatalf("train after two signals: exit %d, want %d", code, exitInterrupted)
	}
	if !strings.Contains(p.stderr.String(), "abandoned by a second signal") {
		t.Errorf("train after two signals does not say it abandoned the iteration:\n%s", tail(p.stderr.String(), 2000))
	}
}

// TestTrainInterruptExits130AndResumes runs the embedded loop as a process,
// sends SIGINT once the first iteration's metrics line is written, and
// expects exit 130 with "continue with --resume" and a store whose latest
// version is the last iteration in metrics.jsonl; `--resume` then runs the
// remaining iterations, appends their lines and exits 0.
func TestTrainInterruptExits130AndResumes(t *testing.T) {
	testsupport.RequireORT(t)
	bin := toolrlBinary(t, "builds the binary")
	dir := t.TempDir()
	cfgPath := writeTrainConfig(t, dir, "interrupt", 1)
	out := filepath.Join(dir, "out")
	metrics, storeDir := filepath.Join(out, trainer.MetricsFile), filepath.Join(out, trainer.PolicyDir)
	start := time.Now()

	p := startToolrlProc(t, bin, "train", "train", "--config", cfgPath)
	deadline := time.Now().Add(60 * time.Second)
	for countLines(metrics) < 1 {
		if p.done() {
			t.Fatalf("train exited (%v) before its first metrics line", p.err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no metrics line after 60 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(60 * time.Second); code != exitInterrupted {
		t.Fatalf("interrupted train: exit %d, want %d", code, exitInterrupted)
	}
	t.Logf("%.1fs: interrupted run exited 130:\n%s", time.Since(start).Seconds(), p.stdout.String())
	if !strings.Contains(p.stderr.String(), "continue with --resume") || !strings.Contains(p.stdout.String(), "interrupted") {
		t.Errorf("interrupted run does not say interrupted and continue with --resume\nstdout:\n%s\nstderr:\n%s", p.stdout.String(), tail(p.stderr.String(), 2000))
	}
	ms := testsupport.ReadJSONLines[trainer.IterationMetrics](t, metrics)
	done := len(ms)
	if done < 1 || done >= smallIterations {
		t.Fatalf("interrupted run wrote %d metrics lines, want 1..%d", done, smallIterations-1)
	}
	if v := latestVersion(t, storeDir).Number; v != int64(done) || ms[done-1].PublishedVersion != v {
		t.Errorf("after the interrupt: store latest %d, metrics lines %d (last published %d)", v, done, ms[done-1].PublishedVersion)
	}

	r := startToolrlProc(t, bin, "train --resume", "train", "--config", cfgPath, "--resume")
	if code := r.wait(90 * time.Second); code != 0 {
		t.Fatalf("resumed train: exit %d, want 0", code)
	}
	t.Logf("%.1fs: resumed run exited 0:\n%s", time.Since(start).Seconds(), r.stdout.String())
	if want := fmt.Sprintf("done: iterations %d-%d", done+1, smallIterations); !strings.Contains(r.stdout.String(), want) {
		t.Errorf("resumed run does not say %q:\n%s", want, r.stdout.String())
	}
	ms = testsupport.ReadJSONLines[trainer.IterationMetrics](t, metrics)
	if len(ms) != smallIterations {
		t.Fatalf("%d metrics lines after resume, want %d", len(ms), smallIterations)
	}
	for i, m := range ms {
		if m.Iteration != i+1 || m.RolloutVersion != int64(i) || m.PublishedVersion != int64(i+1) {
			t.Errorf("metrics line %d: iteration %d, versions %d -> %d", i, m.Iteration, m.RolloutVersion, m.PublishedVersion)
		}
	}
	if v := latestVersion(t, storeDir).Number; v != smallIterations {
		t.Errorf("store latest %d after resume, want %d", v, smallIterations)
	}
	evs := testsupport.ReadJSONLines[trainer.EvalMetrics](t, filepath.Join(out, trainer.EvalFile))
	var evIters []int
	for _, e := range evs {
		evIters = append(evIters, e.Iteration)
	}
	if !slices.Equal(evIters, []int{0, 1, 2, 3}) {
		t.Errorf("eval lines of iterations %v, want [0 1 2 3]", evIters)
	}
}

// TestTrainSmokeConfig runs the shipped experiments/calc-smoke.yaml with the
// built binary, as `bin/toolrl train` runs it (in-process it took twice as
// long: the test binary lacks the GEMM kernel of GOEXPERIMENT=simd), into a
// temporary out: exit 0, the metrics and plot paths printed, 3 metrics lines
// and 4 eval lines. It logs the wall time.
func TestTrainSmokeConfig(t *testing.T) {
	testsupport.RequireORT(t)
	bin := toolrlBinary(t, "builds the binary; 3 iterations of 64 prompts × G=8")
	root := testsupport.RepoRoot(t)
	out := t.TempDir()
	start := time.Now()
	p := startToolrlProc(t, bin, "train smoke", "train", "--config", filepath.Join(root, "experiments", "calc-smoke.yaml"), "--out", out)
	code := p.wait(110 * time.Second)
	wall := time.Since(start)
	stdout := p.stdout.String()
	if code != 0 {
		t.Fatalf("train: exit %d after %.1fs, want 0", code, wall.Seconds())
	}
	t.Logf("experiments/calc-smoke.yaml: %.1fs wall\n%s", wall.Seconds(), stdout)
	for _, want := range []string{
		"metrics         " + filepath.Join(out, trainer.MetricsFile) + ", " + filepath.Join(out, trainer.EvalFile),
		"plots           toolrl plot " + out,
		"latest policy version 3",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not print %q:\n%s", want, stdout)
		}
	}
	if n := countLines(filepath.Join(out, trainer.MetricsFile)); n != 3 {
		t.Errorf("%d metrics lines, want 3", n)
	}
	if n := countLines(filepath.Join(out, trainer.EvalFile)); n != 4 {
		t.Errorf("%d eval lines, want 4", n)
	}
}
