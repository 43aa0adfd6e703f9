package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/stream"
)

// TestRolloutRedisSinkOpenErrors runs the rollout in-process against Redis
// sinks that cannot open: each must fail with the real error, not a panic (a
// nil *redisSink returned as a non-nil Sink used to reach the runner's
// Close).
func TestRolloutRedisSinkOpenErrors(t *testing.T) {
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	model := filepath.Join(root, "models", "calc")
	prompts := filepath.Join(root, "data", "calc", "prompts.jsonl")
	const password = "pw-open-5e2a"
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	if err := admin.ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	l.Close() // nothing listens there now

	for _, c := range []struct {
		name, out, want string
	}{
		{"wrong password", "redis://:wrong@" + srv.Addr + "/0", "WRONGPASS"},
		{"no password", "redis://" + srv.Addr + "/0", "NOAUTH"},
		{"server down", "redis://" + down + "/0", "connection refused"},
		{"tls to a plain server", "rediss://:" + password + "@" + srv.Addr + "/0?dial_timeout=500ms&read_timeout=500ms", "ping"},
		{"bad db", "redis://:" + password + "@" + srv.Addr + "/99", "DB index is out of range"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr string
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("rollout panicked: %v", p)
					}
				}()
				stdout, stderr, err = runToolrl(t, "rollout", "--model", model, "--prompts", prompts, "--limit", "2",
					"--out", c.out, "--job", "open-errors")
			}()
			if err == nil {
				t.Fatalf("rollout to %s succeeded; stdout:\n%s", c.out, stdout)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to name %q", err, c.want)
			}
			if strings.Contains(err.Error()+stdout+stderr, password) {
				t.Errorf("the output holds the password: %v\n%s%s", err, stdout, stderr)
			}
		})
	}
}

// TestRolloutRedisSinkSurvivesRestart restarts the Redis server (AOF on, so
// the data and the set of written group ids survive) for 3 s in the middle
// of a rollout to it: the sink retries, the rollout exits 0, and the stream
// holds every group exactly once.
func TestRolloutRedisSinkSurvivesRestart(t *testing.T) {
	testsupport.RequireORT(t)
	bin := toolrlBinary(t, "builds the binary; restarts a redis-server")
	root := testsupport.RepoRoot(t)
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{AOF: true})
	client := goredis.NewClient(&goredis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer client.Close()
	ctx := context.Background()
	const job, limit = "restart", 256
	keys := stream.JobKeys(job)

	p := startToolrlProc(t, bin, "rollout", "rollout", "--model", filepath.Join(root, "models", "calc"),
		"--prompts", filepath.Join(root, "data", "calc", "prompts.jsonl"), "--limit", "256", "--group-size", "4",
		"--batch", "8", "--threads", "1", "--out", "redis://"+srv.Addr+"/0", "--job", job)
	// Stop the server once the first groups are in.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if n, _ := client.XLen(ctx, keys.Groups).Result(); n >= 2 {
			break
		}
		if p.done() || time.Now().After(deadline) {
			t.Fatalf("no groups in %s before the rollout ended or 60 s passed", keys.Groups)
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.Kill()
	time.Sleep(3 * time.Second)
	if p.done() {
		t.Fatalf("the rollout exited while the server was down (it must wait for it)")
	}
	srv.Restart(t)
	if code := p.wait(120 * time.Second); code != 0 {
		t.Fatalf("rollout exit %d after a 3 s Redis restart, want 0\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), tail(p.stderr.String(), 4000))
	}
	entries, err := client.XRange(ctx, keys.Groups, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range entries {
		id, _ := e.Values[stream.FieldGroupID].(string)
		seen[id]++
	}
	if len(seen) != limit || len(entries) != limit {
		t.Fatalf("%d entries, %d distinct groups; want %d of each", len(entries), len(seen), limit)
	}
	if !strings.Contains(p.stderr.String(), "retrying") {
		t.Errorf("the sink did not log a retry; the restart may have missed the writes\nstderr:\n%s", tail(p.stderr.String(), 4000))
	}
}
