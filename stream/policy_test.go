package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/toolrl/toolrl/internal/testsupport"
)

func TestAnnounceAndReadPolicy(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connect(t, r.URL())
	exercisePolicy(t, client, "j")
}

func TestAnnouncePolicyOnCluster(t *testing.T) {
	c := testsupport.StartCluster(t)
	client := connect(t, "redis://"+c.Addrs[0]+","+c.Addrs[1]+","+c.Addrs[2])
	if _, ok := client.(*goredis.ClusterClient); !ok {
		t.Fatalf("client is %T, want a cluster client", client)
	}
	exercisePolicy(t, client, "cj")
}

func exercisePolicy(t *testing.T, client goredis.UniversalClient, job string) {
	ctx := context.Background()
	keys := JobKeys(job)
	if keys.Policy != "toolrl:{"+job+"}:policy" {
		t.Fatalf("Policy key %q", keys.Policy)
	}
	if _, found, err := ReadPolicy(ctx, client, keys); found || err != nil {
		t.Fatalf("ReadPolicy before any announcement: %v, %v", found, err)
	}
	at := time.Date(2026, 5, 1, 12, 0, 0, 123, time.UTC)
	p1 := PolicyPointer{Version: 1, Dir: "/store/v000001", PublishedAt: at}
	if err := AnnouncePolicy(ctx, client, keys, p1); err != nil {
		t.Fatal(err)
	}
	expect := func(want PolicyPointer) {
		t.Helper()
		got, found, err := ReadPolicy(ctx, client, keys)
		if err != nil || !found || got.Version != want.Version || got.Dir != want.Dir || !got.PublishedAt.Equal(want.PublishedAt) {
			t.Fatalf("ReadPolicy = %+v, %v, %v; want %+v", got, found, err, want)
		}
		if v, err := client.Get(ctx, keys.PolicyVersion).Result(); err != nil || v != fmt.Sprint(want.Version) {
			t.Fatalf("%s = %q, %v; want %d", keys.PolicyVersion, v, err, want.Version)
		}
	}
	expect(p1)

	// Not newer: refused, nothing written.
	for _, v := range []int64{1, 0, -3} {
		err := AnnouncePolicy(ctx, client, keys, PolicyPointer{Version: v, Dir: "/other"})
		if err == nil {
			t.Fatalf("announcing %d after 1 succeeded", v)
		}
	}
	if err := AnnouncePolicy(ctx, client, keys, PolicyPointer{Version: 1, Dir: "/other"}); !errors.Is(err, ErrPolicyNotNewer) {
		t.Fatalf("re-announcing 1: %v, want ErrPolicyNotNewer", err)
	}
	if err := AnnouncePolicy(ctx, client, keys, PolicyPointer{Version: 2}); err == nil || !strings.Contains(err.Error(), "dir") {
		t.Fatalf("announcing without a dir: %v", err)
	}
	expect(p1)

	// A trainer's policy_version above the pointer also refuses.
	client.Set(ctx, keys.PolicyVersion, "5", 0)
	if err := AnnouncePolicy(ctx, client, keys, PolicyPointer{Version: 4, Dir: "/store/v000004"}); !errors.Is(err, ErrPolicyNotNewer) ||
		!strings.Contains(err.Error(), "stored version is 5") {
		t.Fatalf("announcing 4 with policy_version 5: %v", err)
	}
	p6 := PolicyPointer{Version: 6, Dir: "/store/v000006", PublishedAt: at.Add(time.Minute)}
	if err := AnnouncePolicy(ctx, client, keys, p6); err != nil {
		t.Fatal(err)
	}
	expect(p6)

	// Concurrent announcements: the highest wins, both keys agree.
	var wg sync.WaitGroup
	for v := int64(7); v <= 30; v++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := AnnouncePolicy(ctx, client, keys, PolicyPointer{Version: v, Dir: fmt.Sprintf("/store/v%06d", v), PublishedAt: at})
			if err != nil && !errors.Is(err, ErrPolicyNotNewer) {
				t.Errorf("announce %d: %v", v, err)
			}
		}()
	}
	wg.Wait()
	expect(PolicyPointer{Version: 30, Dir: "/store/v000030", PublishedAt: at})

	// A pointer that does not decode is an error naming the key, and
	// AnnouncePolicy leaves it alone.
	client.Set(ctx, keys.Policy, "not json", 0)
	if _, _, err := ReadPolicy(ctx, client, keys); err == nil || !strings.Contains(err.Error(), keys.Policy) {
		t.Fatalf("ReadPolicy of a bad value: %v", err)
	}
	if err := AnnouncePolicy(ctx, client, keys, PolicyPointer{Version: 31, Dir: "/d"}); err == nil || !strings.Contains(err.Error(), keys.Policy) {
		t.Fatalf("AnnouncePolicy over a bad value: %v", err)
	}
	if v, _ := client.Get(ctx, keys.Policy).Result(); v != "not json" {
		t.Fatalf("bad value overwritten with %q", v)
	}
}
