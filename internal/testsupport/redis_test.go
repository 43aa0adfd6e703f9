package testsupport

import (
	"context"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

func TestRedisAOFSurvivesRestart(t *testing.T) {
	r := StartRedis(t, RedisOptions{AOF: true})
	ctx := context.Background()
	client := goredis.NewClient(&goredis.Options{Addr: r.Addr})
	defer client.Close()
	if err := client.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r.Restart(t)
	got, err := client.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("after restart GET k = %q, %v; want v (AOF)", got, err)
	}
}

func TestRedisWithoutAOFLosesDataOnKill(t *testing.T) {
	r := StartRedis(t, RedisOptions{})
	ctx := context.Background()
	client := goredis.NewClient(&goredis.Options{Addr: r.Addr})
	defer client.Close()
	client.Set(ctx, "k", "v", 0)
	r.Restart(t)
	if err := client.Get(ctx, "k").Err(); err != goredis.Nil {
		t.Fatalf("GET after restart without AOF = %v, want redis.Nil", err)
	}
}

func TestClusterServesAllSlots(t *testing.T) {
	c := StartCluster(t)
	if len(c.Addrs) != 3 {
		t.Fatalf("%d masters, want 3", len(c.Addrs))
	}
	ctx := context.Background()
	client := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: c.Addrs})
	defer client.Close()
	// Keys spread over the slot space must all be writable through the cluster.
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "{job}:x", "{job}:y"} {
		if err := client.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	var masters atomic.Int32
	client.ForEachMaster(ctx, func(ctx context.Context, m *goredis.Client) error { masters.Add(1); return nil })
	if masters.Load() != 3 {
		t.Fatalf("cluster reports %d masters, want 3", masters.Load())
	}
}
