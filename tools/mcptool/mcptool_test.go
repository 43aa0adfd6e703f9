package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolrl/toolrl/tools/internal/proctest"
)

// BuildTestServer compiles testdata/server (an MCP server made with the same
// SDK) into dir and returns its path.
func BuildTestServer(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "mcp-test-server")
	// go test puts its own GOROOT/bin first on the PATH.
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/server")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the test MCP server: %v\n%s", err, out)
	}
	return bin
}

func TestServer(t *testing.T) {
	bin := BuildTestServer(t, t.TempDir())
	before := proctest.Descendants(os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, Options{Command: []string{bin}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ti := range s.Tools() {
		names = append(names, ti.Name)
	}
	if got := strings.Join(names, ","); got != "add,env,fail,shout,sleep" {
		t.Errorf("tools = %q", got)
	}
	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	json.Unmarshal(s.Tools()[0].Schema, &schema)
	if _, ok := schema.Properties["a"]; !ok {
		t.Errorf("add schema = %s", s.Tools()[0].Schema)
	}
	out, err := s.Call(ctx, "add", json.RawMessage(`{"a": 20, "b": 22}`))
	if err != nil || out != "42" {
		t.Errorf("add = %q, %v", out, err)
	}
	if _, err := s.Call(ctx, "fail", json.RawMessage(`{"text": "x"}`)); !errors.Is(err, ErrTool) || !strings.Contains(err.Error(), "failed: x") {
		t.Errorf("fail: %v", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = s.Call(short, "sleep", json.RawMessage(`{"ms": 60000}`))
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("sleep past the deadline: %v", err)
	}
	// The session still works after a canceled call.
	if out, err := s.Call(ctx, "shout", json.RawMessage(`{"text": "hi"}`)); err != nil || out != "HI" {
		t.Errorf("shout = %q, %v", out, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := proctest.WaitDescendants(os.Getpid(), before, 10*time.Second); err != nil {
		t.Error(err)
	}
}

func TestStartErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Start(ctx, Options{}); err == nil {
		t.Error("empty command accepted")
	}
	if _, err := Start(ctx, Options{Command: []string{"/nonexistent/server"}}); err == nil {
		t.Error("missing binary accepted")
	}
	bin := BuildTestServer(t, t.TempDir())
	if _, err := Start(ctx, Options{Command: []string{bin}, Include: []string{"add", "nope"}}); err == nil || !strings.Contains(err.Error(), `no tool "nope"`) {
		t.Errorf("include of a missing tool: %v", err)
	}
}

// TestSilentServerTimesOut: a server that reads its requests and never
// answers initialize fails the start within StartTimeout, with an error that
// names its command, and is stopped; the caller's context has no deadline.
func TestSilentServerTimesOut(t *testing.T) {
	script, err := filepath.Abs("testdata/silent-server.sh")
	if err != nil {
		t.Fatal(err)
	}
	before := proctest.Descendants(os.Getpid())
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := Start(context.Background(), Options{Command: []string{script, "--quiet"}, StartTimeout: "300ms"})
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Start hangs on a server that never answers initialize")
	}
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), script+" --quiet") {
		t.Errorf("Start = %v, want ErrTimeout naming %s", err, script)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Start took %s with start_timeout 300ms", d)
	}
	if err := proctest.WaitDescendants(os.Getpid(), before, 10*time.Second); err != nil {
		t.Error(err)
	}
	if _, err := Start(context.Background(), Options{Command: []string{script}, StartTimeout: "soon"}); err == nil || !strings.Contains(err.Error(), "positive duration") {
		t.Errorf("start_timeout soon: %v", err)
	}
}

// TestRequestTimeout: a request the server does not answer fails after
// Timeout even when the caller's context has no deadline.
func TestRequestTimeout(t *testing.T) {
	bin := BuildTestServer(t, t.TempDir())
	s, err := Start(context.Background(), Options{Command: []string{bin}, Timeout: "200ms"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Call(context.Background(), "sleep", json.RawMessage(`{"ms": 60000}`))
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), bin) {
		t.Errorf("sleep past the timeout: %v", err)
	}
	if out, err := s.Call(context.Background(), "shout", json.RawMessage(`{"text": "hi"}`)); err != nil || out != "HI" {
		t.Errorf("shout after a timed-out request = %q, %v", out, err)
	}
}

// A server gets an explicit environment: the variables of DefaultEnv that
// toolrl has, then the entry's env; none of toolrl's others, its Redis
// password least of all (#30).
func TestServerEnvironment(t *testing.T) {
	bin := BuildTestServer(t, t.TempDir())
	t.Setenv("TOOLRL_REDIS_PASSWORD", "R3DISSECRET")
	t.Setenv("SOME_API_KEY", "APIKEYSECRET")
	t.Setenv("HOME", "/home/toolrl-test")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := func(o Options) map[string]string {
		t.Helper()
		o.Command = []string{bin}
		s, err := Start(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		out, err := s.Call(ctx, "env", json.RawMessage(`{"text": ""}`))
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, kv := range strings.Split(out, "\n") {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		return env
	}
	t.Setenv("PASSME", "passed")
	env := start(Options{PassEnv: []string{"PASSME", "UNSET_NAME"}, Env: map[string]string{"HOME": "/elsewhere"}})
	if env["PASSME"] != "passed" || env["HOME"] != "/elsewhere" || env["SOME_API_KEY"] != "" {
		t.Errorf("pass_env PASSME, env HOME: PASSME=%q HOME=%q SOME_API_KEY=%q", env["PASSME"], env["HOME"], env["SOME_API_KEY"])
	}
	if _, ok := env["UNSET_NAME"]; ok {
		t.Errorf("pass_env of an unset variable set it")
	}
	if _, err := Start(ctx, Options{Command: []string{bin}, PassEnv: []string{"TOOLRL_REDIS_PASSWORD"}}); err == nil || !strings.Contains(err.Error(), "TOOLRL_REDIS_PASSWORD: toolrl's own variables are not passed on") {
		t.Errorf("pass_env TOOLRL_REDIS_PASSWORD: %v", err)
	}
	for _, o := range []Options{{}, {Env: map[string]string{"FOO": "bar"}}} {
		env := start(o)
		for _, k := range []string{"TOOLRL_REDIS_PASSWORD", "SOME_API_KEY"} {
			if v, ok := env[k]; ok {
				t.Errorf("env %v: the server got %s=%s", o.Env, k, v)
			}
		}
		if env["HOME"] != "/home/toolrl-test" || env["PATH"] != os.Getenv("PATH") {
			t.Errorf("env %v: HOME=%q PATH=%q, want toolrl's", o.Env, env["HOME"], env["PATH"])
		}
		if o.Env != nil && env["FOO"] != "bar" {
			t.Errorf("env %v: FOO=%q", o.Env, env["FOO"])
		}
	}
}
