package stream

import (
	"context"
	"errors"
	"fmt"
	"io"

	goredis "github.com/redis/go-redis/v9"
)

// RangePage is how many entries one XRANGE of a RangeReader asks for.
const RangePage = 256

// LastID returns the id of stream's last entry, "" when the stream is empty
// or missing: the end to give NewRangeReader for a snapshot of the stream
// as it is now.
func LastID(ctx context.Context, client goredis.UniversalClient, stream string) (string, error) {
	last, err := client.XRevRangeN(ctx, stream, "+", "-", 1).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return "", fmt.Errorf("redis: read the last entry of %s: %w", stream, err)
	}
	if len(last) == 0 {
		return "", nil
	}
	return last[0].ID, nil
}

// RangeReader pages through a stream with XRANGE, RangePage entries per
// round trip, from its first entry to the entry end (inclusive). It reads
// through no consumer group, so it consumes nothing: the stream's consumers
// still get every entry. It is not safe for concurrent use.
type RangeReader struct {
	client goredis.UniversalClient
	stream string
	end    string
	next   string // the XRANGE start of the next page; "" before the first
	done   bool
	page   []goredis.XMessage
}

// NewRangeReader returns a reader of stream's entries up to end (LastID); an
// empty end reads nothing. It does not touch Redis.
func NewRangeReader(client goredis.UniversalClient, stream, end string) *RangeReader {
	return &RangeReader{client: client, stream: stream, end: end}
}

// Stream is the name of the stream the reader reads.
func (r *RangeReader) Stream() string { return r.stream }

// Next returns the next entry (Deliveries 0: nothing was delivered), or
// io.EOF after the last.
func (r *RangeReader) Next(ctx context.Context) (Message, error) {
	if len(r.page) == 0 {
		if r.done || r.end == "" {
			return Message{}, io.EOF
		}
		start := "-"
		if r.next != "" {
			start = r.next
		}
		page, err := r.client.XRangeN(ctx, r.stream, start, r.end, RangePage).Result()
		if err != nil {
			return Message{}, fmt.Errorf("redis: XRANGE %s %s %s: %w", r.stream, start, r.end, err)
		}
		if len(page) == 0 {
			r.done = true
			return Message{}, io.EOF
		}
		last := page[len(page)-1].ID
		if last == r.end || len(page) < RangePage {
			r.done = true
		}
		r.next = "(" + last
		r.page = page
	}
	e := r.page[0]
	r.page = r.page[1:]
	return Message{ID: e.ID, Values: e.Values}, nil
}
