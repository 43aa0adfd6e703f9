package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/stream"
)

// runWithEnv runs the binary in dir with extra environment variables; a process
// still running after d gets SIGINT (its summary and shutdown logs are
// printed then), and SIGKILL 20 s later. It returns stdout and stderr
// together.
func runWithEnv(t *testing.T, bin, dir string, env []string, d time.Duration, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir // a train writes its out: folder there
	cmd.Env = append(os.Environ(), env...)
	var out testsupport.LockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(d):
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	return out.String()
}

// TestNoVerbPrintsARedisPassword runs every verb that takes a Redis URL
// against a password-protected redis-server, with the right password (in
// the URL and in $TOOLRL_REDIS_PASSWORD), a wrong one, and the password as
// a lone userinfo (redis://PW@host, which go-redis reads as a user name),
// and checks that no output holds either password.
func TestNoVerbPrintsARedisPassword(t *testing.T) {
	testsupport.RequireORT(t)
	bin := toolrlBinary(t, "builds the binary; runs some 30 processes")
	const password, wrong = "pw-7c41e0b9a2", "wrongpw-19d3f6"
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	if err := admin.ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		t.Fatal(err)
	}
	admin.Close()

	root := testsupport.RepoRoot(t)
	model := filepath.Join(root, "models", "calc")
	prompts := filepath.Join(root, "data", "calc", "prompts.jsonl")
	dir := t.TempDir()
	const job = "secrets"
	cfgPath := writeTrainConfig(t, dir, "secrets-train", 0)

	// Each form gives the URL for a path (/0, or the job for export) and
	// the environment.
	forms := []struct {
		name string
		url  func(path string) string
		env  []string
	}{
		{"password in url", func(p string) string { return "redis://:" + password + "@" + srv.Addr + "/" + p }, nil},
		{"password in env", func(p string) string { return "redis://" + srv.Addr + "/" + p }, []string{stream.PasswordEnv + "=" + password}},
		{"password= option", func(p string) string { return "redis://" + srv.Addr + "/" + p + "?password=" + password }, nil},
		{"lone userinfo", func(p string) string { return "redis://" + password + "@" + srv.Addr + "/" + p }, nil},
		{"wrong password", func(p string) string { return "redis://:" + wrong + "@" + srv.Addr + "/" + p }, nil},
		{"wrong lone userinfo", func(p string) string { return "redis://" + wrong + "@" + srv.Addr + "/" + p }, nil},
		{"wrong env", func(p string) string { return "redis://" + srv.Addr + "/" + p }, []string{stream.PasswordEnv + "=" + wrong}},
	}
	verbs := []struct {
		name string
		args func(url func(string) string, i int) []string
	}{
		{"rollout --out", func(url func(string) string, i int) []string {
			return []string{"rollout", "--model", model, "--prompts", prompts, "--limit", "2", "--group-size", "2",
				"--max-new-tokens", "24", "--out", url("0"), "--job", job}
		}},
		{"rollout --redis (enqueue)", func(url func(string) string, i int) []string {
			return []string{"rollout", "--prompts", prompts, "--limit", "2", "--redis", url("0"), "--job", job + "-w"}
		}},
		{"rollout --worker", func(url func(string) string, i int) []string {
			return []string{"rollout", "--model", model, "--redis", url("0"), "--job", job + "-w", "--worker",
				"--group-size", "2", "--max-new-tokens", "24", "--claim-idle", "1s"}
		}},
		{"advantage serve", func(url func(string) string, i int) []string {
			return []string{"advantage", "serve", "--redis", url("0"), "--job", job, "--listen", ""}
		}},
		{"export --from", func(url func(string) string, i int) []string {
			return []string{"export", "--from", url(job), "--to", filepath.Join(dir, "export", strings.Repeat("x", i+1)+".jsonl")}
		}},
		{"learn --redis", func(url func(string) string, i int) []string {
			return []string{"learn", "--model", model, "--redis", url("0"), "--job", job, "--listen", "",
				"--store", filepath.Join(dir, "store", strings.Repeat("x", i+1))}
		}},
		{"train --redis", func(url func(string) string, i int) []string {
			return []string{"train", "--config", cfgPath, "--redis", url("0")}
		}},
	}
	for _, v := range verbs {
		for i, f := range forms {
			t.Run(v.name+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				// Services (and a train driver) run until interrupted: 3 s
				// is enough to connect, log and fail.
				out := runWithEnv(t, bin, dir, f.env, 3*time.Second, v.args(f.url, i)...)
				var leaks []string
				for _, line := range strings.Split(out, "\n") {
					if strings.Contains(line, password) || strings.Contains(line, wrong) {
						leaks = append(leaks, line)
					}
				}
				if len(leaks) == 0 {
					return
				}
				t.Errorf("the output holds a password:\n%s\n\nwhole output:\n%s", strings.Join(leaks, "\n"), out)
			})
		}
	}
}
