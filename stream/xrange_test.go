package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
)

// TestRangeReaderReadsUpToTheEnd pages through more entries than one XRANGE
// page, stops at the end it was given (an entry added later is not read), and
// reads nothing from an empty or missing stream.
func TestRangeReaderReadsUpToTheEnd(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connect(t, r.URL())
	ctx := context.Background()
	const key = "toolrl:{range}:groups"
	if end, err := LastID(ctx, client, key); err != nil || end != "" {
		t.Fatalf("LastID of a missing stream: %q, %v; want empty", end, err)
	}
	if _, err := NewRangeReader(client, key, "").Next(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("reading a missing stream: %v, want io.EOF", err)
	}
	const n = RangePage + 7
	p := NewProducer(client, ProducerOptions{MaxBacklog: -1})
	for i := range n {
		if _, err := p.Add(ctx, key, Field{Name: "i", Value: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	end, err := LastID(ctx, client, key)
	if err != nil || end == "" {
		t.Fatalf("LastID: %q, %v", end, err)
	}
	if _, err := p.Add(ctx, key, Field{Name: "i", Value: []byte("late")}); err != nil {
		t.Fatal(err)
	}
	rr := NewRangeReader(client, key, end)
	for i := 0; ; i++ {
		m, err := rr.Next(ctx)
		if errors.Is(err, io.EOF) {
			if i != n {
				t.Fatalf("read %d entries, want %d", i, n)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Values["i"]; got != fmt.Sprint(i) {
			t.Fatalf("entry %d holds i=%v", i, got)
		}
	}
	if _, err := rr.Next(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("Next after the end: %v, want io.EOF", err)
	}
}
