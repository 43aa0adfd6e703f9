package prompt

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/stream"
)

// TestFeedRetryGivesUp: with the server gone for good, the feed retries for
// Retry.For, then fails with an error that says so.
func TestFeedRetryGivesUp(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	ctx := context.Background()
	client := srv.Client(t)
	feed, err := NewRedisFeed(ctx, client, RedisFeedOptions{Job: "gone", Consumer: "w", Retry: stream.Retry{For: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	start := time.Now()
	_, _, err = feed.Next(ctx, true)
	if err == nil || !strings.Contains(err.Error(), "gave up after retrying for 500ms") || !strings.Contains(err.Error(), stream.JobKeys("gone").Prompts) {
		t.Errorf("Next with the server gone: %v, want the stream named and the retry given up", err)
	}
	if d := time.Since(start); d < 400*time.Millisecond || d > 10*time.Second {
		t.Errorf("gave up after %s, want about 500ms", d)
	}
}
