package stream

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/internal/testsupport"
)

func TestParseURL(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == PasswordEnv {
				return v
			}
			return ""
		}
	}
	cases := []struct {
		url, envPass string
		addrs        []string
		cluster      bool
		master       string
		password     string
		db           int
		tls          bool
	}{
		{url: "redis://localhost", addrs: []string{"localhost:6379"}},
		{url: "redis://:s3cret@h:7000/2", addrs: []string{"h:7000"}, password: "s3cret", db: 2},
		{url: "redis://h:7000", envPass: "fromenv", addrs: []string{"h:7000"}, password: "fromenv"},
		{url: "redis://:inurl@h:7000", envPass: "fromenv", addrs: []string{"h:7000"}, password: "inurl"},
		{url: "rediss://h:7000", addrs: []string{"h:7000"}, tls: true},
		{url: "redis://h:7000?password=inquery", envPass: "fromenv", addrs: []string{"h:7000"}, password: "inquery"},
		{url: "redis://:inurl@h:7000?password=inquery", addrs: []string{"h:7000"}, password: "inurl"},
		{url: "redis://a:1,b:2,c:3", addrs: []string{"a:1", "b:2", "c:3"}, cluster: true},
		{url: "redis://a:1?cluster=true&addr=b:2", addrs: []string{"a:1", "b:2"}, cluster: true},
		{url: "redis://s1:26379,s2:26379?sentinel=mymaster", addrs: []string{"s1:26379", "s2:26379"}, master: "mymaster"},
	}
	for _, c := range cases {
		o, err := ParseURL(c.url, ConnectOptions{Getenv: env(c.envPass)})
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if strings.Join(o.Addrs, " ") != strings.Join(c.addrs, " ") || o.IsClusterMode != c.cluster || o.MasterName != c.master ||
			o.Password != c.password || o.DB != c.db || (o.TLSConfig != nil) != c.tls {
			t.Errorf("%s: addrs %v cluster %v master %q db %d tls %v password set %v", c.url, o.Addrs, o.IsClusterMode, o.MasterName, o.DB,
				o.TLSConfig != nil, o.Password != "")
		}
	}
	for _, bad := range []string{"http://h", "redis://h/x", "redis://:pw0rd@a:1,b:2/3", "redis://h?bogus=1", "redis://h?cluster=maybe",
		"redis://h/x?password=pw0rd", "redis://h?cluster=maybe&password=pw0rd", "redis://h?passwrd=1&redis_password=pw0rd",
		"redis://h?auth=pw0rd", "redis://h?pass=pw0rd&db=1"} {
		_, err := ParseURL(bad, ConnectOptions{})
		if err == nil {
			t.Errorf("%s: accepted", bad)
		} else if strings.Contains(err.Error(), "pw0rd") {
			t.Errorf("%s: error shows the password: %v", bad, err)
		}
	}
	if got := Redact("redis://user:pw0rd@h:1/0?sentinel_password=sp&password=qp&db=0"); strings.Contains(got, "pw0rd") ||
		strings.Contains(got, "=sp") || strings.Contains(got, "=qp") || !strings.Contains(got, "db=0") {
		t.Errorf("Redact left a password: %s", got)
	}
}

func TestConnectWithPasswordFromEnv(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	ctx := context.Background()
	admin, err := Connect(ctx, r.URL(), ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.ConfigSet(ctx, "requirepass", "pw0rd").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := Connect(ctx, r.URL(), ConnectOptions{Getenv: func(string) string { return "" }}); err == nil {
		t.Fatal("connected without the password")
	}
	c, err := Connect(ctx, r.URL(), ConnectOptions{Getenv: func(k string) string {
		if k == PasswordEnv {
			return "pw0rd"
		}
		return ""
	}})
	if err != nil {
		t.Fatalf("password from %s: %v", PasswordEnv, err)
	}
	c.Close()
	_, err = Connect(ctx, "redis://:wrong-pw0rd@"+r.Addr, ConnectOptions{})
	if err == nil || strings.Contains(err.Error(), "wrong-pw0rd") {
		t.Fatalf("wrong password: %v", err)
	}
}

func TestValidateJob(t *testing.T) {
	if err := ValidateJob("exp-1.a_b"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "a{b", "a}b", "a b", "a\nb"} {
		if ValidateJob(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	k := JobKeys("j1")
	for _, key := range []string{k.Prompts, k.Groups, k.Advantages, k.Dead, k.PolicyVersion, k.GroupsWritten, k.GroupsDone} {
		if !strings.HasPrefix(key, "toolrl:{j1}:") {
			t.Errorf("key %s lacks the hash tag", key)
		}
	}
}

// TestConnectThroughSentinel starts a Sentinel watching a test server and
// connects with ?sentinel=NAME: the client finds the master through it.
func TestConnectThroughSentinel(t *testing.T) {
	master := testsupport.StartRedis(t, testsupport.RedisOptions{})
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testsupport.SkipOrFail(t, "redis-server not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	host, mport, _ := net.SplitHostPort(master.Addr)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor toolrl-master %s %s 1\nsentinel down-after-milliseconds toolrl-master 60000\n", port, dir, host, mport)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, conf, "--sentinel")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	url := fmt.Sprintf("redis://127.0.0.1:%d?sentinel=toolrl-master", port)
	ctx := context.Background()
	var client goredis.UniversalClient
	deadline := time.Now().Add(10 * time.Second)
	for {
		client, err = Connect(ctx, url, ConnectOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("connect through sentinel: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // the sentinel is starting
	}
	defer client.Close()
	if w, err := NewProducer(client, ProducerOptions{}).AddGroup(ctx, "sj", testGroup("sj", "p", 2)); err != nil || !w {
		t.Fatalf("AddGroup through sentinel: %v %v", w, err)
	}
	direct, err := Connect(ctx, master.URL(), ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if n, err := direct.XLen(ctx, JobKeys("sj").Groups).Result(); err != nil || n != 1 {
		t.Fatalf("master holds %d group entries (%v), want 1", n, err)
	}
}

// The URL path is the database in every verb; a job written there is
// refused, saying where a job goes (#30).
func TestParseURLPathIsTheDatabase(t *testing.T) {
	if o, err := ParseURL("redis://h:1/3", ConnectOptions{}); err != nil || o.DB != 3 {
		t.Errorf("redis://h:1/3: db %v, %v", o, err)
	}
	if _, err := ParseURL("redis://h:1/calc-demo", ConnectOptions{}); err == nil || !strings.Contains(err.Error(), "the URL path is the database; a job is named with --job") {
		t.Errorf("redis://h:1/calc-demo: %v", err)
	}
}
