package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// learnRecords are n valid v2 advantage records for a vocabulary of vocab
// tokens (policy version 0, behaviour logprobs near uniform).
func learnRecords(n, vocab int) []traj.AdvantageRecord {
	var recs []traj.AdvantageRecord
	for i := range n {
		tokens := make([]int32, 4+6+i%5)
		for j := range tokens {
			tokens[j] = int32((i*31 + j*7) % vocab)
		}
		resp := len(tokens) - 4
		mask, old, adv := make(traj.Mask, resp), make([]float32, resp), make([]float32, resp)
		for j := range mask {
			mask[j], old[j], adv[j] = 1, -5.8, float32(i%2*2-1)
		}
		temp := 1.0
		recs = append(recs, traj.AdvantageRecord{
			Schema: traj.AdvantageSchema, TrajectoryID: fmt.Sprintf("job/p%d/%d", i/4, i%4), GroupID: fmt.Sprintf("job/p%d", i/4),
			SampleIndex: i % 4, InputIDs: tokens, PromptLen: 4, LossMask: mask, OldLogprobs: old, Advantages: adv,
			Mode: "outcome", Estimator: "grpo", Temperature: &temp,
		})
	}
	return recs
}

// metricValue returns the value of an unlabelled series in a Prometheus text
// exposition.
func metricValue(exposition, name string) (float64, bool) {
	for _, line := range strings.Split(exposition, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// TestLearnRedisServesMetricsAndExits130 runs `toolrl learn --redis` as a
// subprocess against a password-protected redis-server: it trains on the
// job's advantages stream, publishes versions and moves the policy pointer,
// serves non-zero update and version series on /metrics (--listen port 0),
// and on SIGINT exits 130 with a summary line, never printing the password.
func TestLearnRedisServesMetricsAndExits130(t *testing.T) {
	bin := toolrlBinary(t, "builds the binary")
	const password = "pw-3b1f9c0e7d"
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	if err := admin.ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	client := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Password: password})
	defer client.Close()
	ctx := context.Background()

	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	w, err := llama.RandomWeights(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	model, storeDir := filepath.Join(dir, "model"), filepath.Join(dir, "store")
	if _, err := llama.WriteFolder(model, llama.FolderSpec{Config: cfg, Weights: w, Safetensors: true}); err != nil {
		t.Fatal(err)
	}
	const job = "learn-cli"
	keys := stream.JobKeys(job)
	recs := learnRecords(16, cfg.VocabSize)
	for i := range recs {
		data, err := wire.EncodeRecord(&recs[i])
		if err != nil {
			t.Fatal(err)
		}
		var values []any
		for _, f := range stream.RecordFields(&recs[i], data) {
			values = append(values, f.Name, f.Value)
		}
		if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Advantages, Values: values}).Err(); err != nil {
			t.Fatal(err)
		}
	}

	url := "redis://:" + password + "@" + srv.Addr + "/0"
	// A wrong password fails without echoing it either.
	_, stderr, err := runToolrl(t, "learn", "--redis", "redis://:wrong-"+password+"@"+srv.Addr+"/0", "--job", job,
		"--model", model, "--store", filepath.Join(dir, "unused"), "--listen", "")
	if err == nil || strings.Contains(err.Error()+stderr, password) {
		t.Errorf("wrong password: err %v (want one), output %q: must not hold the password", err, stderr)
	}

	proc := startBackground(t, bin, "learn", "--redis", url, "--job", job, "--model", model, "--store", storeDir,
		"--listen", "127.0.0.1:0", "--batch", "8", "--max-wait", "200ms", "--max-staleness", "-1", "--lr", "1e-3")
	fail := func(format string, args ...any) { t.Helper(); proc.fatalf(t, format, args...) }

	// The listener's address is logged; both batches are trained, published
	// and acknowledged.
	addrRE := regexp.MustCompile(`serving /metrics and /healthz" addr=(127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(15 * time.Second)
	var addr string
	for {
		if m := addrRE.FindStringSubmatch(proc.stderr.String()); m != nil {
			addr = m[1]
		}
		p, perr := client.XPending(ctx, keys.Advantages, stream.LearnerGroup).Result()
		ptr, found, _ := stream.ReadPolicy(ctx, client, keys)
		if addr != "" && perr == nil && p.Count == 0 && found && ptr.Version == 2 {
			break
		}
		select {
		case <-proc.done:
			err := proc.err
			fail("learn exited early: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			fail("no metrics address, or versions 1 and 2 not published and acknowledged within 15 s")
		}
	}

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		fail("GET /metrics: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for name, want := range map[string]float64{
		"toolrl_learner_updates_total": 2, "toolrl_learner_policy_version": 2, "toolrl_learner_published_total": 2,
		"toolrl_learner_records_total": 16,
	} {
		if got, ok := metricValue(string(body), name); !ok || got != want {
			t.Errorf("/metrics %s = %g (present %v), want %g", name, got, ok, want)
		}
	}
	// Two updates trained: the histograms have samples, and promtool finds
	// nothing to lint.
	if n, ok := metricValue(string(body), "toolrl_learner_update_seconds_count"); !ok || n != 2 {
		t.Errorf("/metrics update_seconds_count = %g (present %v), want 2", n, ok)
	}
	testsupport.CheckMetrics(t, string(body))
	checkDocumented(t, "learn", string(body))

	if err := proc.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proc.done:
		err = proc.err
	case <-time.After(10 * time.Second):
		fail("learn did not exit within 10 s of SIGINT")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		fail("exit: %v, want code %d", err, exitInterrupted)
	}
	out := proc.stdout.String() + proc.stderr.String()
	if strings.Contains(out, password) {
		t.Errorf("the Redis password appears in the output:\n%s", out)
	}
	if !strings.Contains(proc.stderr.String(), "learn: 2 updates, 2 optimiser steps, 2 versions published (v0 → v2); records 16 read, 16 trained") ||
		!strings.Contains(proc.stderr.String(), "stopped by signal after publishing version 2") {
		fail("no summary line of 2 updates and versions v0 → v2, or no interrupted note")
	}

	latest := latestVersion(t, storeDir)
	if err := policystore.Verify(ctx, latest); err != nil {
		t.Errorf("latest v%d does not verify: %v", latest.Number, err)
	}
	if _, _, err := learner.LoadModel(latest.Dir); err != nil {
		t.Errorf("latest v%d does not load: %v", latest.Number, err)
	}
	ptr, found, err := stream.ReadPolicy(ctx, client, keys)
	if err != nil || !found || ptr.Version != latest.Number || ptr.Dir != latest.Dir || latest.Number != 2 {
		t.Errorf("policy pointer %+v (found %v, %v), store latest v%d at %s; want both at version 2", ptr, found, err, latest.Number, latest.Dir)
	}
	if n, err := client.Get(ctx, keys.PolicyVersion).Int64(); err != nil || n != 2 {
		t.Errorf("%s = %d (%v), want 2", keys.PolicyVersion, n, err)
	}
}
