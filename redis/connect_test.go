package redis

import (
	"context"
	"strings"
	"testing"

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
	for _, bad := range []string{"http://h", "redis://h/x", "redis://:pw0rd@a:1,b:2/3", "redis://h?bogus=1", "redis://h?cluster=maybe"} {
		_, err := ParseURL(bad, ConnectOptions{})
		if err == nil {
			t.Errorf("%s: accepted", bad)
		} else if strings.Contains(err.Error(), "pw0rd") {
			t.Errorf("%s: error shows the password: %v", bad, err)
		}
	}
	if got := Redact("redis://user:pw0rd@h:1/0?sentinel_password=sp"); strings.Contains(got, "pw0rd") || strings.Contains(got, "=sp") {
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
