package stream

import (
	"context"
	"reflect"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/internal/testsupport"
)

// Depth of a stream that does not exist is 0 and no groups; of one with
// two groups, XLEN and each group's pending and lag: "a" read 3 of 5 and
// acknowledged 1, "b" read nothing.
func TestDepth(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connect(t, r.URL())
	ctx := context.Background()
	if n, groups, err := Depth(ctx, client, "none"); err != nil || n != 0 || groups != nil {
		t.Fatalf("Depth of a missing stream = %d, %v, %v; want 0, none, nil", n, groups, err)
	}
	for range 5 {
		if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: "s", Values: []string{"k", "v"}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"a", "b"} {
		if err := client.XGroupCreate(ctx, "s", g, "0").Err(); err != nil {
			t.Fatal(err)
		}
	}
	read, err := client.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: "a", Consumer: "c", Streams: []string{"s", ">"}, Count: 3}).Result()
	if err != nil || len(read[0].Messages) != 3 {
		t.Fatalf("XREADGROUP: %v, %v", read, err)
	}
	if err := client.XAck(ctx, "s", "a", read[0].Messages[0].ID).Err(); err != nil {
		t.Fatal(err)
	}
	n, groups, err := Depth(ctx, client, "s")
	want := []GroupDepth{{Group: "a", Pending: 2, Lag: 2}, {Group: "b", Pending: 0, Lag: 5}}
	if err != nil || n != 5 || !reflect.DeepEqual(groups, want) {
		t.Errorf("Depth = %d, %+v, %v; want 5, %+v", n, groups, err, want)
	}
}
