package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/stream"
)

// parseExposition returns the samples of a Prometheus text exposition by
// series, the name with its labels as exposed (sorted by label name), e.g.
// toolrl_rollout_tool_calls_total{outcome="ok",tool="calculator"}.
func parseExposition(t *testing.T, body string) map[string]float64 {
	t.Helper()
	series := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		series[line[:i]] = v
	}
	return series
}

// readSummaryJSON reads a --summary-json file.
func readSummaryJSON(t *testing.T, path string) orchestrator.SummaryJSON {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s orchestrator.SummaryJSON
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("--summary-json %s: %v\n%s", path, err, data)
	}
	if s.Schema != orchestrator.SummarySchema {
		t.Errorf("schema %q, want %q", s.Schema, orchestrator.SummarySchema)
	}
	return s
}

// checkMetricsMatchSummary compares scraped toolrl_rollout_* series with
// the run's JSON summary: every counter the summary has, and the tool calls
// series one for one with its (tool, outcome) counts.
func checkMetricsMatchSummary(t *testing.T, series map[string]float64, s orchestrator.SummaryJSON) {
	t.Helper()
	want := map[string]float64{
		"toolrl_rollout_prompts_read_total":            float64(s.Prompts.Read),
		"toolrl_rollout_prompts_refused_total":         float64(s.Prompts.Refused),
		"toolrl_rollout_prompts_skipped_total":         float64(s.Prompts.Skipped),
		"toolrl_rollout_groups_written_total":          float64(s.Groups.Written),
		"toolrl_rollout_groups_resumed_total":          float64(s.Groups.Resumed),
		"toolrl_rollout_groups_duplicate_total":        float64(s.Groups.Duplicate),
		"toolrl_rollout_groups_with_signal_total":      float64(s.Groups.WithSignal),
		"toolrl_rollout_trajectories_total":            float64(s.Trajectories.Written),
		"toolrl_rollout_trajectories_with_call_total":  float64(s.Trajectories.WithCall),
		"toolrl_rollout_trajectories_correct_total":    float64(s.Trajectories.Correct),
		"toolrl_rollout_sampled_tokens_total":          float64(s.Tokens.Sampled),
		"toolrl_rollout_injected_tokens_total":         float64(s.Tokens.Injected),
		"toolrl_rollout_reward_mean":                   s.RewardMean,
		"toolrl_rollout_accuracy_ratio":                s.Accuracy,
		"toolrl_rollout_policy_version":                float64(s.Policy.Version),
		"toolrl_rollout_policy_reloads_total":          float64(s.Policy.Reloads),
		"toolrl_rollout_policy_versions_refused_total": float64(len(s.Policy.VersionsRefused)),
	}
	for reason, n := range s.Trajectories.Finish {
		want[fmt.Sprintf("toolrl_rollout_finish_total{reason=%q}", reason)] = float64(n)
	}
	calls := 0
	for tool, byOutcome := range s.ToolCalls.ByTool {
		for outcome, n := range byOutcome {
			want[fmt.Sprintf("toolrl_rollout_tool_calls_total{outcome=%q,tool=%q}", outcome, tool)] = float64(n)
			calls++
		}
	}
	if w := s.Worker; w != nil {
		want["toolrl_rollout_worker_claimed_total"] = float64(w.Claimed)
		want["toolrl_rollout_worker_reclaimed_total"] = float64(w.Reclaimed)
		want["toolrl_rollout_worker_done_total"] = float64(w.Done)
		want[`toolrl_rollout_worker_dead_lettered_total{reason="refused"}`] = float64(w.Refused)
		want[`toolrl_rollout_worker_dead_lettered_total{reason="corrupt"}`] = float64(w.Corrupt)
	}
	for name, v := range want {
		got, ok := series[name]
		if !ok || math.Abs(got-v) > 1e-9*max(1, math.Abs(v)) {
			t.Errorf("/metrics %s = %g (present %v), summary %g", name, got, ok, v)
		}
	}
	for name := range series {
		if strings.HasPrefix(name, "toolrl_rollout_tool_calls_total{") {
			calls--
		}
	}
	if calls != 0 {
		t.Errorf("/metrics has %d tool_calls_total series more than the summary's (tool, outcome) pairs %v", -calls, s.ToolCalls.ByTool)
	}
	// Every executed calculator call is timed: at least those that came back ok.
	if ok := s.ToolCalls.ByTool["calculator"]["ok"]; series[`toolrl_rollout_tool_call_seconds_count{tool="calculator"}`] < float64(ok) {
		t.Errorf("tool_call_seconds_count{calculator} %g < %d ok calls", series[`toolrl_rollout_tool_call_seconds_count{tool="calculator"}`], ok)
	}
}

// TestRolloutWorkerServesMetrics runs `toolrl rollout --worker --follow
// --listen 127.0.0.1:0 --summary-json` on the calc policy against a
// password-protected redis-server: once the worker has written the three
// enqueued prompts' groups, /metrics has the tool calls by tool and outcome,
// the groups, tokens and worker claims of the JSON summary written at
// SIGINT (exit 130), /healthz answers ok, and neither holds the password.
func TestRolloutWorkerServesMetrics(t *testing.T) {
	testsupport.RequireORT(t)
	bin := toolrlBinary(t, "builds the binary")
	root := testsupport.RepoRoot(t)
	const password = "pw-metrics-51c2"
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	if err := admin.ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	client := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Password: password})
	defer client.Close()
	url := "redis://:" + password + "@" + srv.Addr + "/0"
	const job, prompts = "metrics", 3
	ctx := context.Background()
	set, err := prompt.ReadFile(filepath.Join(root, "data", "calc", "prompts.jsonl"), prompts, false)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := prompt.Enqueue(ctx, client, job, set.Prompts); err != nil || n != prompts {
		t.Fatalf("enqueue: %d, %v", n, err)
	}
	summaryPath := filepath.Join(t.TempDir(), "summary.json")
	proc := startBackground(t, bin, "rollout", "--model", filepath.Join(root, "models", "calc"), "--redis", url, "--job", job,
		"--worker", "--follow", "--group-size", "4", "--seed", "3", "--threads", "1",
		"--listen", "127.0.0.1:0", "--summary-json", summaryPath)
	fail := func(format string, args ...any) { t.Helper(); proc.fatalf(t, format, args...) }
	get := func(addr, path string) string {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			fail("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			fail("GET %s: %s\n%s", path, resp.Status, body)
		}
		return string(body)
	}

	// The address is logged; the series show every group written (the
	// worker then waits for more prompts: --follow).
	addrRE := regexp.MustCompile(`serving /metrics and /healthz" addr=(127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(120 * time.Second)
	var addr string
	var series map[string]float64
	for {
		if addr == "" {
			if m := addrRE.FindStringSubmatch(proc.stderr.String()); m != nil {
				addr = m[1]
			}
		}
		if addr != "" {
			series = parseExposition(t, get(addr, "/metrics"))
			if series["toolrl_rollout_groups_written_total"] == prompts && series["toolrl_rollout_worker_done_total"] == prompts {
				break
			}
		}
		select {
		case <-proc.done:
			err := proc.err
			fail("worker exited early: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			fail("no metrics address, or /metrics without %d groups written within 120 s: %v", prompts, series)
		}
	}
	body := get(addr, "/metrics")
	testsupport.CheckMetrics(t, body)
	checkDocumented(t, "rollout", body)
	if h := get(addr, "/healthz"); strings.TrimSpace(h) != "ok" {
		t.Errorf("/healthz %q, want ok", h)
	}
	if strings.Contains(body, password) || strings.Contains(body, "redis://") {
		t.Errorf("/metrics holds the Redis URL or its password:\n%s", body)
	}

	if err := proc.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proc.done:
		err = proc.err
	case <-time.After(30 * time.Second):
		fail("worker did not exit within 30 s of SIGINT")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		fail("exit: %v, want code %d", err, exitInterrupted)
	}
	raw, _ := os.ReadFile(summaryPath)
	if strings.Contains(string(raw), password) {
		t.Errorf("--summary-json holds the Redis password:\n%s", raw)
	}
	s := readSummaryJSON(t, summaryPath)
	if s.Status != "interrupted" || s.Job != job || s.Worker == nil || s.Worker.Claimed != prompts {
		t.Errorf("summary status %q job %q worker %+v, want interrupted, %s, %d claimed", s.Status, s.Job, s.Worker, job, prompts)
	}
	if s.ToolCalls.ByTool["calculator"]["ok"] == 0 {
		t.Fatalf("the calc policy made no successful calculator call: nothing to compare\n%s", raw)
	}
	checkMetricsMatchSummary(t, parseExposition(t, body), s)
	if got := proc.stdout.String(); !strings.Contains(got, fmt.Sprintf("groups         %d written", prompts)) {
		t.Errorf("printed summary does not say %d groups written:\n%s", prompts, got)
	}
	if _, err := client.XLen(ctx, stream.JobKeys(job).Groups).Result(); err != nil {
		t.Fatal(err)
	}
}

// TestRolloutSummaryJSON: a file rollout's --summary-json holds the printed
// summary's numbers (groups, trajectories, tokens, tool calls, reward,
// accuracy, output) under the documented names.
func TestRolloutSummaryJSON(t *testing.T) {
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	dir := t.TempDir()
	out, summaryPath := filepath.Join(dir, "roll.jsonl"), filepath.Join(dir, "summary.json")
	stdout, stderr, err := runToolrl(t, "rollout", "--model", filepath.Join(root, "models", "calc"),
		"--prompts", filepath.Join(root, "data", "calc", "prompts.jsonl"), "--out", out, "--limit", "3",
		"--group-size", "2", "--seed", "1", "--job", "sj", "--listen", "127.0.0.1:0", "--summary-json", summaryPath)
	if err != nil {
		t.Fatalf("rollout: %v\n%s", err, stderr)
	}
	s := readSummaryJSON(t, summaryPath)
	num := func(re string) []float64 {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(stdout)
		if m == nil {
			t.Fatalf("printed summary has no %q:\n%s", re, stdout)
		}
		var vs []float64
		for _, g := range m[1:] {
			v, err := strconv.ParseFloat(g, 64)
			if err != nil {
				t.Fatal(err)
			}
			vs = append(vs, v)
		}
		return vs
	}
	for _, c := range []struct {
		re   string
		want []float64
	}{
		{`prompts +(\d+) read, (\d+) skipped`, []float64{float64(s.Prompts.Read), float64(s.Prompts.Skipped)}},
		{`groups +(\d+) written \((\d+) trajectories\)`, []float64{float64(s.Groups.Written), float64(s.Trajectories.Written)}},
		{`tokens +(\d+) sampled, (\d+) injected`, []float64{float64(s.Tokens.Sampled), float64(s.Tokens.Injected)}},
		{`tool calls +(\d+) \(`, []float64{float64(s.ToolCalls.Total)}},
		{`reward +mean ([-\d.]+); accuracy [\d.]+% \((\d+)/(\d+)\)`, []float64{math.Round(s.RewardMean*1000) / 1000, float64(s.Trajectories.Correct), float64(s.Trajectories.Written)}},
	} {
		if got := num(c.re); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("printed %q = %v, JSON %v", c.re, got, c.want)
		}
	}
	if s.Status != "done" || s.Job != "sj" || s.Output != out || s.Groups.Written != 3 || s.Trajectories.Written != 6 || s.Worker != nil {
		t.Errorf("summary %+v: want done, job sj, output %s, 3 groups, 6 trajectories, no worker", s, out)
	}
	byTool := 0
	for _, outcomes := range s.ToolCalls.ByTool {
		for outcome, n := range outcomes {
			byTool += n
			if n > s.ToolCalls.ByOutcome[outcome] {
				t.Errorf("outcome %s: %d calls of one tool, %d in all", outcome, n, s.ToolCalls.ByOutcome[outcome])
			}
		}
	}
	if byTool != s.ToolCalls.Total || s.ToolCalls.Total == 0 {
		t.Errorf("tool calls by tool add up to %d, total %d (want equal and > 0)", byTool, s.ToolCalls.Total)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Contains(line, "tool calls") {
			if !strings.Contains(line, fmt.Sprintf("ok %d", s.ToolCalls.ByOutcome["ok"])) {
				t.Errorf("printed %q, JSON ok %d", line, s.ToolCalls.ByOutcome["ok"])
			}
		}
	}
}

// TestRolloutListenRefused: an address that cannot be listened on, or
// --listen / --summary-json while only enqueueing, is a usage error (exit
// 2) naming the flag, before any model is loaded; --summary-json onto the
// output is refused naming both.
func TestRolloutListenRefused(t *testing.T) {
	root := testsupport.RepoRoot(t)
	dir := t.TempDir()
	model, prompts := filepath.Join(root, "models", "calc"), filepath.Join(root, "data", "calc", "prompts.jsonl")
	out := filepath.Join(dir, "out.jsonl")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--listen", "127.0.0.1:99999"}, []string{"--listen", "127.0.0.1:99999"}},
		{[]string{"--listen", "no-such-host.invalid:9102"}, []string{"--listen", "no-such-host.invalid:9102"}},
		{[]string{"--summary-json", out}, []string{"--summary-json", "--out"}},
		{[]string{"--summary-json", prompts}, []string{"--summary-json", "--prompts"}},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "--job", "j", "--listen", "127.0.0.1:0"}, []string{"--listen", "enqueued"}},
	} {
		args := append([]string{"rollout", "--model", model, "--prompts", prompts, "--out", out, "--limit", "1"}, c.args...)
		_, _, err := runToolrl(t, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", c.args, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q does not name %q", c.args, err, w)
			}
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused rollout wrote %s (%v)", out, err)
	}
}
