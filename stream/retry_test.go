package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/internal/testsupport"
)

func TestRedactHidesEveryUserinfo(t *testing.T) {
	for raw, want := range map[string]string{
		"redis://SECRET@h:1/0":        "redis://xxxxx@h:1/0",
		"redis://:SECRET@h:1/0":       "redis://:xxxxx@h:1/0",
		"redis://user:SECRET@h:1/0":   "redis://user:xxxxx@h:1/0",
		"rediss://SECRET@a:1,b:2/job": "rediss://xxxxx@a:1,b:2/job",
		"redis://h:1/0?retry=30s":     "redis://h:1/0?retry=30s",
		"redis://h:1/0":               "redis://h:1/0",
	} {
		if got := Redact(raw); got != want {
			t.Errorf("Redact(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestWriteRetry(t *testing.T) {
	for raw, want := range map[string]time.Duration{
		"redis://h/0":              DefaultWriteRetry,
		"redis://h/0?retry=5s":     5 * time.Second,
		"redis://h/0?retry=2.5":    2500 * time.Millisecond,
		"redis://h/0?retry=0":      0,
		"redis://:pw@h/0?retry=1m": time.Minute,
	} {
		got, err := WriteRetry(raw)
		if err != nil || got != want {
			t.Errorf("WriteRetry(%q) = %v, %v; want %v", raw, got, err, want)
		}
		if _, err := ParseURL(raw, ConnectOptions{}); err != nil {
			t.Errorf("ParseURL(%q): %v (retry= must be accepted)", raw, err)
		}
	}
	for _, raw := range []string{"redis://:pw@h/0?retry=soon", "redis://:pw@h/0?retry=-1s"} {
		_, err := WriteRetry(raw)
		if err == nil || strings.Contains(err.Error(), "pw@") {
			t.Errorf("WriteRetry(%q): err %v, want one without the password", raw, err)
		}
	}
}

func TestIsTransient(t *testing.T) {
	if IsTransient(nil) || IsTransient(goredis.ErrClosed) || IsTransient(context.Canceled) ||
		IsTransient(errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")) {
		t.Error("a nil, closed-client, canceled or command error counted as transient")
	}
}

// TestAddGroupsRetriesThroughRestart stops the server for 2 s between two
// writes (AOF on, so the written-group set survives): the producer with
// RetryFor waits it out and writes the group once; without RetryFor the
// write fails.
func TestAddGroupsRetriesThroughRestart(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{AOF: true})
	ctx := context.Background()
	client, err := Connect(ctx, r.URL(), ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var retries atomic.Int32
	p := NewProducer(client, ProducerOptions{RetryFor: 20 * time.Second,
		OnRetry: func(error, time.Duration) { retries.Add(1) }})
	noRetry := NewProducer(client, ProducerOptions{})
	const job = "retry"
	payload := func(i int) []GroupPayload {
		return []GroupPayload{{GroupID: fmt.Sprintf("g%d", i), JSON: []byte(`{}`)}}
	}
	if _, err := p.AddGroupPayloads(ctx, job, payload(0)); err != nil {
		t.Fatal(err)
	}

	r.Kill()
	if _, err := noRetry.AddGroupPayloads(ctx, job, payload(1)); err == nil || !IsTransient(err) {
		t.Fatalf("without RetryFor, a write to a stopped server: %v, want a transient error", err)
	}
	type result struct {
		written []bool
		err     error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		written, err := p.AddGroupPayloads(ctx, job, payload(1))
		done <- result{written, err}
	}()
	time.Sleep(2 * time.Second)
	r.Restart(t)
	res := <-done
	if res.err != nil || !res.written[0] {
		t.Fatalf("write through a 2 s restart: %v %v", res.written, res.err)
	}
	if time.Since(start) < time.Second || retries.Load() == 0 {
		t.Errorf("the write returned after %s with %d retries: the outage was not exercised", time.Since(start), retries.Load())
	}
	// Written once: a second write of the same group writes nothing.
	if written, err := p.AddGroupPayloads(ctx, job, payload(1)); err != nil || written[0] {
		t.Errorf("rewrite of g1: %v %v, want not written", written, err)
	}
	if n, err := client.XLen(ctx, JobKeys(job).Groups).Result(); err != nil || n != 2 {
		t.Errorf("stream length %d (%v), want 2", n, err)
	}

	// A bounded retry gives up with the error.
	r.Kill()
	short := NewProducer(client, ProducerOptions{RetryFor: 500 * time.Millisecond})
	start = time.Now()
	_, err = short.AddGroupPayloads(ctx, job, payload(2))
	if err == nil || !strings.Contains(err.Error(), "gave up after retrying for 500ms") {
		t.Errorf("retry past RetryFor: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("gave up after %s, want about 500ms", d)
	}
}

// Backoff waits 100 ms, doubling to at most 2 s, and starts again on Reset.
func TestBackoffSchedule(t *testing.T) {
	var b Backoff
	var got []time.Duration
	for range 7 {
		got = append(got, b.Next())
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 2 * time.Second, 2 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
	b.Reset()
	if d := b.Next(); d != 100*time.Millisecond {
		t.Errorf("after Reset: %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b.Wait(ctx) {
		t.Error("Wait on a cancelled context slept")
	}
}
