package stream

import (
	"context"
	"fmt"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/toolrl/toolrl/internal/testsupport"
)

// TestTrimConsumed: only entries every consumer group has delivered and
// acknowledged go; pending and undelivered ones stay, and so does a stream
// nobody consumes.
func TestTrimConsumed(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connect(t, r.URL())
	ctx := context.Background()
	const stream = "s"
	var ids []string
	for i := 0; i < 10; i++ {
		id, err := client.XAdd(ctx, &goredis.XAddArgs{Stream: stream, Values: []any{"i", i}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if n, err := TrimConsumed(ctx, client, stream); err != nil || n != 0 {
		t.Fatalf("no groups: trimmed %d, %v; want 0", n, err)
	}
	read := func(group string, n int64) []string {
		res, err := client.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: group, Consumer: "c", Streams: []string{stream, ">"}, Count: n, Block: -1}).Result()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range res[0].Messages {
			got = append(got, m.ID)
		}
		return got
	}
	for _, g := range []string{"fast", "slow"} {
		if err := client.XGroupCreate(ctx, stream, g, "0").Err(); err != nil {
			t.Fatal(err)
		}
	}
	// fast: delivered 8, acknowledged all but the 4th (index 3).
	got := read("fast", 8)
	client.XAck(ctx, stream, "fast", append(got[:3:3], got[4:]...)...)
	// slow: delivered 6, all acknowledged.
	client.XAck(ctx, stream, "slow", read("slow", 6)...)
	n, err := TrimConsumed(ctx, client, stream)
	if err != nil {
		t.Fatal(err)
	}
	// The bound is fast's pending entry (index 3): entries 0-2 go.
	left, err := client.XRange(ctx, stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 || len(left) != 7 || left[0].ID != ids[3] {
		t.Fatalf("trimmed %d, %d left starting at %v; want 3 trimmed, 7 left from %s", n, len(left), left[0].ID, ids[3])
	}
	// fast acknowledges its pending entry: now slow's last delivered entry
	// (index 5) bounds the trim, and it is kept.
	client.XAck(ctx, stream, "fast", ids[3])
	if n, err = TrimConsumed(ctx, client, stream); err != nil || n != 2 {
		t.Fatalf("trimmed %d, %v; want 2", n, err)
	}
	// Every remaining entry can still be read by both groups where they left off.
	if got := read("slow", 10); fmt.Sprint(got) != fmt.Sprint(ids[6:]) {
		t.Errorf("slow reads %v after trimming, want %v", got, ids[6:])
	}
	if got := read("fast", 10); fmt.Sprint(got) != fmt.Sprint(ids[8:]) {
		t.Errorf("fast reads %v after trimming, want %v", got, ids[8:])
	}
	if n, err := TrimConsumed(ctx, client, "missing"); err != nil || n != 0 {
		t.Errorf("missing stream: %d, %v", n, err)
	}
}

func TestIDLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{{"1-0", "2-0", true}, {"10-0", "9-5", false}, {"5-1", "5-10", true}, {"5-3", "5-3", false}, {"x", "1-0", true}} {
		if got := idLess(c.a, c.b); got != c.want {
			t.Errorf("idLess(%s, %s) = %v", c.a, c.b, got)
		}
	}
}
