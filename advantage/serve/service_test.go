package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/advantage/offline"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/tinymodel"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// The reliability tests run the service as a subprocess (this test binary,
// re-executed with helperEnv set) so that they can SIGKILL it.
const (
	helperEnv    = "TOOLRL_ADVANTAGE_TEST_SERVICE"
	helperURLEnv = "TOOLRL_ADVANTAGE_TEST_URL"
	helperJobEnv = "TOOLRL_ADVANTAGE_TEST_JOB"
	testG        = 4 // trajectories per test group
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(serviceHelper())
	}
	os.Exit(m.Run())
}

func testServiceOptions(job string) Options {
	cfg := advantage.DefaultConfig()
	cfg.Mode, cfg.KL, cfg.ProcessWeight = advantage.ModeHybrid, advantage.KLK3, 0.5
	return Options{
		Job: job, Config: cfg, Workers: 2, Batch: 8, Block: 50 * time.Millisecond,
		ClaimIdle: 400 * time.Millisecond, MetricsInterval: 100 * time.Millisecond,
	}
}

// serviceHelper is the subprocess: the service until SIGTERM/SIGINT.
func serviceHelper() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	client, err := stream.Connect(ctx, os.Getenv(helperURLEnv), stream.ConnectOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer client.Close()
	svc, err := New(client, testServiceOptions(os.Getenv(helperJobEnv)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := svc.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type helper struct {
	cmd  *exec.Cmd
	log  string
	done chan error
}

func startHelper(t *testing.T, url, job string) *helper {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "service.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperURLEnv+"="+url, helperJobEnv+"="+job)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() { h.done <- cmd.Wait(); logFile.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-h.done
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("service log (pid %d):\n%s", cmd.Process.Pid, lastLines(string(data), 30))
		}
	})
	return h
}

// kill SIGKILLs the service: no graceful shutdown, batches in flight stay
// pending.
func (h *helper) kill(t *testing.T) {
	t.Helper()
	_ = h.cmd.Process.Kill()
	err := <-h.done
	h.done <- err
}

// stop SIGTERMs the service and checks it exits 0 within 20 s.
func (h *helper) stop(t *testing.T) {
	t.Helper()
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-h.done:
		h.done <- err
		if err != nil {
			t.Errorf("service exited after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Error("service did not stop within 20 s of SIGTERM")
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// produce adds groups [0, n) of job through a blocking producer, retrying
// failed writes (AddGroup is idempotent, so a retry never duplicates).
func produce(ctx context.Context, client goredis.UniversalClient, job string, n int, backlog int64) error {
	p := stream.NewProducer(client, stream.ProducerOptions{MaxBacklog: backlog, Poll: 5 * time.Millisecond, Groups: []string{stream.AdvantageGroup}})
	for i := 0; i < n; {
		batch := []*traj.Group{streamGroup(job, i)}
		if i+1 < n && i%3 == 0 {
			batch = append(batch, streamGroup(job, i+1)) // exercise AddGroups too
		}
		if _, err := p.AddGroups(ctx, job, batch); err != nil {
			if ctx.Err() != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond) // redis is restarting: retry
			continue
		}
		i += len(batch)
	}
	return nil
}

// addCorrupt adds two entries the service must dead-letter: bad JSON, and a
// valid group whose group_id field disagrees with its payload.
func addCorrupt(t *testing.T, client goredis.UniversalClient, job string) {
	t.Helper()
	ctx := context.Background()
	keys := stream.JobKeys(job)
	good, _ := wire.EncodeGroup(streamGroup(job, 100000))
	for _, values := range [][]any{
		{stream.FieldGroupID, job + "/bad", stream.FieldGroup, `{"schema":"toolrl.trajectory/v2","trajectories":[{`},
		{stream.FieldGroupID, job + "/other", stream.FieldGroup, good},
	} {
		if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Groups, Values: values}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// startRun runs svc until the returned cancel is called or the test ends;
// Run's result comes on the channel.
func startRun(t *testing.T, svc *Service) (context.Context, context.CancelFunc, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	return ctx, cancel, done
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func doneCount(client goredis.UniversalClient, job string) int64 {
	n, _ := client.SCard(context.Background(), stream.JobKeys(job).GroupsDone).Result()
	return n
}

// verifyExactlyOnce checks that the advantages stream holds every trajectory
// of groups [0, n) exactly once (except dropped zero-variance groups: none
// here, they are kept), that the two corrupt entries are dead letters, and
// that nothing is pending.
func verifyExactlyOnce(t *testing.T, client goredis.UniversalClient, job string, n int) {
	t.Helper()
	ctx := context.Background()
	keys := stream.JobKeys(job)
	seen := map[string]int{}
	start := "-"
	for {
		msgs, err := client.XRangeN(ctx, keys.Advantages, start, "+", 1000).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			data, _ := m.Values[stream.FieldRecord].(string)
			r, err := wire.DecodeRecord([]byte(data))
			if err != nil {
				t.Fatalf("advantages entry %s: %v", m.ID, err)
			}
			if m.Values[stream.FieldTrajectoryID] != r.TrajectoryID {
				t.Fatalf("entry %s: trajectory_id field %v, record %s", m.ID, m.Values[stream.FieldTrajectoryID], r.TrajectoryID)
			}
			seen[r.TrajectoryID]++
			// Records are v2 and carry the trajectory's temperature: 0.7,
			// none for the v1 groups of streamGroup.
			var i int
			if _, err := fmt.Sscanf(strings.TrimPrefix(r.TrajectoryID, job+"/"), "p%05d/", &i); err != nil {
				t.Fatalf("entry %s: trajectory id %s: %v", m.ID, r.TrajectoryID, err)
			}
			if v1 := i%5 == 2; r.Schema != traj.AdvantageSchema || v1 != (r.Temperature == nil) || !v1 && *r.Temperature != 0.7 {
				t.Fatalf("entry %s: schema %s temperature %v (group %d)", m.ID, r.Schema, r.Temperature, i)
			}
		}
		if len(msgs) < 1000 {
			break
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
	if len(seen) != n*testG {
		t.Errorf("advantages hold %d distinct trajectories, want %d", len(seen), n*testG)
	}
	for i := 0; i < n; i++ {
		for k := 0; k < testG; k++ {
			id := traj.TrajectoryID(job, fmt.Sprintf("p%05d", i), 0, k)
			if seen[id] != 1 {
				t.Errorf("trajectory %s written %d times, want exactly once", id, seen[id])
			}
		}
	}
	dead, err := client.XRange(ctx, keys.Dead, "-", "+").Result()
	if err != nil || len(dead) != 2 {
		t.Fatalf("dead letters: %d (%v), want 2", len(dead), err)
	}
	for _, d := range dead {
		if d.Values[stream.FieldReason] == "" || d.Values["field:"+stream.FieldGroup] == nil {
			t.Errorf("dead letter without reason or original fields: %v", d.Values)
		}
	}
	p, err := client.XPending(ctx, keys.Groups, stream.AdvantageGroup).Result()
	if err != nil || p.Count != 0 {
		t.Errorf("pending after the run: %+v %v", p, err)
	}
}

func connectTest(t *testing.T, url string) goredis.UniversalClient {
	t.Helper()
	c, err := stream.Connect(context.Background(), url, stream.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// killAndRestart: the service is SIGKILLed at a random point mid-stream and a
// new one started; every group comes out exactly once.
func killAndRestart(t *testing.T, url string) {
	const job, n = "killjob", 240
	client := connectTest(t, url)
	addCorrupt(t, client, job)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var produceErr error
	wg.Add(1)
	go func() { defer wg.Done(); produceErr = produce(ctx, client, job, n, 24) }()

	first := startHelper(t, url, job)
	killAt := int64(20 + rand.IntN(n/2))
	waitFor(t, fmt.Sprintf("%d groups done before the kill", killAt), 60*time.Second, func() bool { return doneCount(client, job) >= killAt })
	first.kill(t)
	t.Logf("SIGKILLed the service after %d groups were done (target %d)", doneCount(client, job), killAt)

	second := startHelper(t, url, job)
	waitFor(t, "all groups done", 60*time.Second, func() bool { return doneCount(client, job) == n })
	wg.Wait()
	if produceErr != nil {
		t.Fatal(produceErr)
	}
	waitFor(t, "the dead letters", 30*time.Second, func() bool {
		d, _ := client.XLen(ctx, stream.JobKeys(job).Dead).Result()
		return d == 2
	})
	second.stop(t)
	verifyExactlyOnce(t, client, job, n)
}

func TestServiceSIGKILLAndRestart(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{AOF: true})
	killAndRestart(t, r.URL())
}

func TestServiceSIGKILLAndRestartOnCluster(t *testing.T) {
	c := testsupport.StartCluster(t)
	killAndRestart(t, "redis://"+strings.Join(c.Addrs, ","))
}

func TestServiceTwoReplicas(t *testing.T) {
	const job, n = "twojob", 200
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connectTest(t, r.URL())
	a, b := startHelper(t, r.URL(), job), startHelper(t, r.URL(), job)
	addCorrupt(t, client, job)
	if err := produce(context.Background(), client, job, n, 32); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "all groups done", 60*time.Second, func() bool { return doneCount(client, job) == n })
	waitFor(t, "the dead letters", 30*time.Second, func() bool {
		d, _ := client.XLen(context.Background(), stream.JobKeys(job).Dead).Result()
		return d == 2
	})
	a.stop(t)
	b.stop(t)
	verifyExactlyOnce(t, client, job, n)
	consumers, err := client.XInfoConsumers(context.Background(), stream.JobKeys(job).Groups, stream.AdvantageGroup).Result()
	if err != nil || len(consumers) != 4 {
		t.Errorf("consumers %d (%v), want 2 replicas × 2 workers", len(consumers), err)
	}
}

// TestServiceSurvivesRedisRestart runs the service in process while
// redis-server (AOF, fsync always) is SIGKILLed and restarted mid-stream.
func TestServiceSurvivesRedisRestart(t *testing.T) {
	const job, n = "aofjob", 160
	r := testsupport.StartRedis(t, testsupport.RedisOptions{AOF: true})
	client := connectTest(t, r.URL())
	svc, err := New(client, testServiceOptions(job))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel, runDone := startRun(t, svc)
	addCorrupt(t, client, job)

	var wg sync.WaitGroup
	var produceErr error
	wg.Add(1)
	go func() { defer wg.Done(); produceErr = produce(ctx, client, job, n, 16) }()
	waitFor(t, "a third of the groups done", 60*time.Second, func() bool { return doneCount(client, job) >= n/3 })
	r.Restart(t)
	t.Logf("restarted redis-server after %d groups", doneCount(client, job))
	waitFor(t, "all groups done after the restart", 60*time.Second, func() bool { return doneCount(client, job) == n })
	wg.Wait()
	if produceErr != nil {
		t.Fatal(produceErr)
	}
	waitFor(t, "the dead letters", 30*time.Second, func() bool {
		d, _ := client.XLen(ctx, stream.JobKeys(job).Dead).Result()
		return d == 2
	})
	cancel()
	if err := <-runDone; err != nil {
		t.Fatalf("Run: %v", err)
	}
	verifyExactlyOnce(t, client, job, n)
}

func TestServiceMetricsHealthAndStaleness(t *testing.T) {
	const job = "metricsjob"
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connectTest(t, r.URL())
	opts := testServiceOptions(job)
	opts.Config.MaxStaleness = 1
	svc, err := New(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	if code := get(t, srv.URL+"/healthz"); !strings.HasPrefix(code, "503") {
		t.Errorf("healthz before start: %s", code)
	}
	// Groups are at policy version 5; the trainer is at 7: every group is stale.
	if err := client.Set(context.Background(), stream.JobKeys(job).PolicyVersion, 7, 0).Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel, runDone := startRun(t, svc)
	addCorrupt(t, client, job)
	if err := produce(ctx, client, job, 10, 100); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "all groups done", 30*time.Second, func() bool { return doneCount(client, job) == 10 })
	waitFor(t, "metrics", 30*time.Second, func() bool {
		body := get(t, srv.URL+"/metrics")
		return strings.Contains(body, "toolrl_advantage_stale_dropped_total 10") &&
			strings.Contains(body, "toolrl_advantage_dead_letters_total 2") &&
			strings.Contains(body, `toolrl_advantage_stream_pending_entries{group="advantage",stream="groups"} 0`) &&
			strings.Contains(body, `toolrl_advantage_stream_lag_entries{group="advantage",stream="groups"} 0`) &&
			strings.Contains(body, `toolrl_advantage_stream_length_entries{stream="dead"} 2`)
	})
	// After work, with histogram samples: promtool finds nothing to lint.
	testsupport.CheckMetrics(t, strings.TrimPrefix(get(t, srv.URL+"/metrics"), "200 "))
	if body := get(t, srv.URL+"/healthz"); !strings.HasPrefix(body, "200") {
		t.Errorf("healthz while running: %s", body)
	}
	if n, _ := client.XLen(ctx, stream.JobKeys(job).Advantages).Result(); n != 0 {
		t.Errorf("stale groups wrote %d records", n)
	}
	cancel()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
}

// get returns "STATUS body".
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = io.Copy(&buf, resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, buf.String())
}

// tinyRefModel writes a tiny random Llama and loads it as a reference
// scorer (one ORT thread: CPU is shared with the other tests).
func tinyRefModel(t *testing.T) *actor.Policy {
	t.Helper()
	dir := tinymodel.Write(t, 3, nil)
	pol, err := actor.Load(context.Background(), actor.LoadOptions{Dir: dir, IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pol.Close() })
	return pol
}

// advantageRecords reads every record of job's advantages stream, with the
// entry's raw record field.
func advantageRecords(t *testing.T, client goredis.UniversalClient, job string) (map[string]traj.AdvantageRecord, map[string]string) {
	t.Helper()
	msgs, err := client.XRange(context.Background(), stream.JobKeys(job).Advantages, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	recs, raw := map[string]traj.AdvantageRecord{}, map[string]string{}
	for _, m := range msgs {
		data, _ := m.Values[stream.FieldRecord].(string)
		r, err := wire.DecodeRecord([]byte(data))
		if err != nil {
			t.Fatalf("advantages entry %s: %v", m.ID, err)
		}
		if _, dup := recs[r.TrajectoryID]; dup {
			t.Fatalf("record %s written twice", r.TrajectoryID)
		}
		recs[r.TrajectoryID], raw[r.TrajectoryID] = r, data
	}
	return recs, raw
}

func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

// TestServiceScoresMissingReferences runs groups without (or with some)
// ref_logprobs through the service with a real ORT reference model: their
// records carry references equal to the offline path's on the same input, and
// KL folded into the reward; a group with a token outside the model's
// vocabulary is dead-lettered with the reason, and the rest flows.
func TestServiceScoresMissingReferences(t *testing.T) {
	const job, n = "refjob", 12
	pol := tinyRefModel(t)
	groups := make([]*traj.Group, n)
	var all []traj.Trajectory
	for i := range groups {
		g := streamGroup(job, i)
		for k := range g.Trajectories {
			if i%2 == 0 || k == 1 {
				g.Trajectories[k].RefLogprobs = nil
			}
		}
		groups[i] = g
		all = append(all, g.Trajectories...)
	}
	bad := streamGroup(job, n)
	bad.Trajectories[2].RefLogprobs = nil
	bad.Trajectories[2].Tokens[0] = int32(pol.VocabSize())

	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connectTest(t, r.URL())
	opts := testServiceOptions(job)
	opts.Config.KLCoef = 0.01
	opts.RefScorer, opts.RefBatch = pol, 5
	svc, err := New(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel, runDone := startRun(t, svc)
	p := stream.NewProducer(client, stream.ProducerOptions{})
	if _, err := p.AddGroups(ctx, job, append(groups, bad)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "all groups done", 60*time.Second, func() bool { return doneCount(client, job) == n })
	waitFor(t, "the dead letter", 30*time.Second, func() bool {
		d, _ := client.XLen(ctx, stream.JobKeys(job).Dead).Result()
		return d == 1
	})
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	wantScored := 0
	for _, tr := range all {
		if tr.RefLogprobs == nil {
			wantScored++
		}
	}
	if body := get(t, srv.URL+"/metrics"); !strings.Contains(body, fmt.Sprintf("toolrl_advantage_ref_scored_total %d\n", wantScored)) {
		t.Errorf("metrics lack ref_scored_total %d:\n%s", wantScored, body)
	}
	cancel()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	dead, err := client.XRange(context.Background(), stream.JobKeys(job).Dead, "-", "+").Result()
	if err != nil || len(dead) != 1 {
		t.Fatalf("dead letters %v, %v", dead, err)
	}
	if reason, _ := dead[0].Values[stream.FieldReason].(string); !strings.Contains(reason, bad.Trajectories[2].ID) ||
		!strings.Contains(reason, "outside the reference model's vocabulary") {
		t.Errorf("dead letter reason %q", reason)
	}

	got, raw := advantageRecords(t, client, job)
	offCfg := opts.Config
	offCfg.MaxStaleness = -1 // the service had no policy version
	sink := &recordsByID{}
	st, err := offline.Run(context.Background(), &trajectoryList{ts: all}, sink, offline.Options{Config: offCfg, RefScorer: pol, RefBatch: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := sink.recs
	if st.RefScored != int64(wantScored) || len(got) != len(want) || len(got) != n*testG {
		t.Fatalf("service wrote %d records, offline %d (ref-scored %d of %d)", len(got), len(want), st.RefScored, wantScored)
	}
	inputRefs := map[string][]float32{}
	for _, tr := range all {
		inputRefs[tr.ID] = tr.RefLogprobs
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Fatalf("no service record for %s", id)
		}
		if len(g.RefLogprobs) != len(g.LossMask) || len(g.KL) != len(g.LossMask) || g.KLEstimator != string(advantage.KLK3) {
			t.Fatalf("record %s: ref_logprobs %v kl %v", id, g.RefLogprobs, g.KL)
		}
		if d := maxDiff(g.RefLogprobs, w.RefLogprobs); d > 1e-5 {
			t.Errorf("record %s: ref_logprobs differ from offline's by %g", id, d)
		}
		if in := inputRefs[id]; in != nil && !reflect.DeepEqual(g.RefLogprobs, in) {
			t.Errorf("record %s: input ref_logprobs not kept", id)
		}
		if d := max(maxDiff(g.KL, w.KL), maxDiff(g.Advantages, w.Advantages)); d > 1e-4 {
			t.Errorf("record %s: kl or advantages differ from offline's by %g", id, d)
		}
		// The spliced references are formatted as traj's encoder would.
		if data, err := wire.EncodeRecord(&g); err != nil || string(data) != raw[id] {
			t.Errorf("record %s: service JSON differs from wire.EncodeRecord (%v):\n%s\n%s", id, err, raw[id], data)
		}
	}
}

// trajectoryList is an offline.TrajectorySource over ts.
type trajectoryList struct{ ts []traj.Trajectory }

func (l *trajectoryList) Next() (traj.Trajectory, error) {
	if len(l.ts) == 0 {
		return traj.Trajectory{}, io.EOF
	}
	t := l.ts[0]
	l.ts = l.ts[1:]
	return t, nil
}

// recordsByID is an offline.RecordSink keeping records by trajectory id.
type recordsByID struct {
	recs map[string]traj.AdvantageRecord
}

func (r *recordsByID) Write(recs ...traj.AdvantageRecord) error {
	if r.recs == nil {
		r.recs = map[string]traj.AdvantageRecord{}
	}
	for _, rec := range recs {
		r.recs[rec.TrajectoryID] = rec
	}
	return nil
}

// halfScores scores every response token of seqs -0.5.
func halfScores(seqs [][]int32, promptLens []int) [][]float32 {
	out := make([][]float32, len(seqs))
	for i, s := range seqs {
		out[i] = slices.Repeat([]float32{-0.5}, len(s)-promptLens[i])
	}
	return out
}

// failingScorer fails any call holding a sequence with token poison, or
// every call when always is set; it scores the rest -0.5.
type failingScorer struct {
	poison int32
	always bool
	calls  int
}

func (f *failingScorer) ScoreTemperature(ctx context.Context, seqs [][]int32, promptLens []int, _ float64) ([][]float32, error) {
	f.calls++
	for i, s := range seqs {
		if f.always || slices.Contains(s, f.poison) {
			return nil, fmt.Errorf("sequence %d: cannot score", i)
		}
	}
	return halfScores(seqs, promptLens), nil
}

// A sequence that fails alone sends its group to the dead letters and the
// rest of the batch is scored; a scorer that fails on everything fails the
// batch (retried) rather than dead-lettering the groups.
func TestServiceReferenceScoringFailures(t *testing.T) {
	const job = "failjob"
	batch := func() []wireGroup {
		var groups []wireGroup
		for i := range 4 {
			g := streamGroup(job, i)
			for k := range g.Trajectories {
				g.Trajectories[k].RefLogprobs = nil
			}
			if i == 2 {
				g.Trajectories[3].Tokens[0] = 77
			}
			payload, err := wire.EncodeGroup(g)
			if err != nil {
				t.Fatal(err)
			}
			m := stream.Message{ID: fmt.Sprintf("1-%d", i), Values: map[string]any{stream.FieldGroup: string(payload), stream.FieldGroupID: g.GroupID}}
			groups = append(groups, (&Service{opts: Options{Job: job}}).decode(m))
		}
		return groups
	}
	opts := testServiceOptions(job)
	opts.Config.KLCoef = 0.01
	sc := &failingScorer{poison: 77}
	opts.RefScorer, opts.RefBatch = sc, 6
	svc, err := New(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	groups := batch()
	if err := svc.scoreReferences(context.Background(), groups, opts.Config); err != nil {
		t.Fatal(err)
	}
	for i, wg := range groups {
		if i == 2 {
			if wg.err == nil || !strings.Contains(wg.err.Error(), "trajectory "+wg.g.Trajectories[3].ID) {
				t.Errorf("group 2: %v, want a scoring failure of its trajectory 3", wg.err)
			}
			continue
		}
		if wg.err != nil {
			t.Fatalf("group %d: %v", i, wg.err)
		}
		out, _, err := svc.computeGroup(&groups[i], opts.Config, new(advantage.Scratch))
		if err != nil || len(out.Entries) != testG {
			t.Fatalf("group %d: %d entries, %v", i, len(out.Entries), err)
		}
		rec, err := wire.DecodeRecord(out.Entries[0][len(out.Entries[0])-1].Value)
		if err != nil || len(rec.RefLogprobs) == 0 || len(rec.KL) == 0 {
			t.Fatalf("group %d: record %+v, %v", i, rec, err)
		}
	}

	// One sequence per call (RefBatch 1), and a call that holds only one
	// group's failing sequences: the scorer answers a probe, so only that
	// group is dead-lettered and the rest of the batch goes on.
	for _, refBatch := range []int{1, testG} {
		svc.opts.RefScorer, svc.opts.RefBatch = &failingScorer{poison: 77}, refBatch
		groups = batch()
		for k := range groups[2].g.Trajectories {
			groups[2].g.Trajectories[k].Tokens[0] = 77
		}
		if err := svc.scoreReferences(context.Background(), groups, opts.Config); err != nil {
			t.Fatalf("ref batch %d: %v, want group 2 dead-lettered and the batch committed", refBatch, err)
		}
		for i, wg := range groups {
			if (wg.err != nil) != (i == 2) {
				t.Errorf("ref batch %d: group %d: error %v", refBatch, i, wg.err)
			}
		}
	}
	svc.opts.RefBatch = 6

	svc.opts.RefScorer = &failingScorer{always: true}
	groups = batch()
	err = svc.scoreReferences(context.Background(), groups, opts.Config)
	if !errors.Is(err, advantage.ErrRefScorer) {
		t.Errorf("a scorer that always fails: %v, want advantage.ErrRefScorer", err)
	}
	for i, wg := range groups {
		if wg.err != nil {
			t.Errorf("group %d dead-lettered by a scorer failure: %v", i, wg.err)
		}
	}
}

// blockingScorer signals started on its first call and then waits for
// release before scoring.
type blockingScorer struct {
	started, release chan struct{}
	once             sync.Once
}

func (b *blockingScorer) ScoreTemperature(ctx context.Context, seqs [][]int32, promptLens []int, _ float64) ([][]float32, error) {
	b.once.Do(func() { close(b.started) })
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return halfScores(seqs, promptLens), nil
}

// A graceful shutdown that begins while a batch is in flight (here, held in
// reference scoring) lets that batch finish: it is committed exactly once and
// nothing stays pending.
func TestServiceShutdownCommitsBatchInFlight(t *testing.T) {
	const job, n = "shutjob", 8
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connectTest(t, r.URL())
	groups := make([]*traj.Group, n)
	for i := range groups {
		groups[i] = streamGroup(job, i)
		groups[i].Trajectories[0].RefLogprobs = nil
	}
	if _, err := stream.NewProducer(client, stream.ProducerOptions{}).AddGroups(context.Background(), job, groups); err != nil {
		t.Fatal(err)
	}
	opts := testServiceOptions(job)
	opts.Workers, opts.Batch = 1, n
	sc := &blockingScorer{started: make(chan struct{}), release: make(chan struct{})}
	opts.RefScorer = sc
	svc, err := New(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, cancel, runDone := startRun(t, svc)
	select {
	case <-sc.started:
	case err := <-runDone:
		t.Fatalf("Run returned before scoring: %v", err)
	}
	cancel() // shutdown begins with the batch in the scorer
	close(sc.release)
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	keys := stream.JobKeys(job)
	if d := doneCount(client, job); d != n {
		t.Errorf("%d groups done after the shutdown, want %d", d, n)
	}
	got, _ := advantageRecords(t, client, job) // fails on a duplicate
	if len(got) != n*testG {
		t.Errorf("%d records, want %d", len(got), n*testG)
	}
	p, err := client.XPending(context.Background(), keys.Groups, stream.AdvantageGroup).Result()
	if err != nil || p.Count != 0 {
		t.Errorf("pending after the shutdown: %+v %v", p, err)
	}
}

// A service whose Redis is unreachable does not wait forever to start: Run
// gives up after StartRetry, naming the consumer group it could not create.
func TestServiceStartGivesUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	client := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer client.Close()
	opts := testServiceOptions("gone")
	opts.StartRetry = 300 * time.Millisecond
	svc, err := New(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	err = svc.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "create consumer group advantage") || !strings.Contains(err.Error(), "gave up after retrying for 300ms") {
		t.Fatalf("Run with Redis gone: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Run returned only when the test's deadline passed (%v)", time.Since(start))
	}
}
