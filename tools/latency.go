package tools

import (
	"math"
	"sort"
	"sync/atomic"
	"time"
)

// latencyBounds are the upper bounds, in seconds, of the latency buckets:
// 0.1 ms doubling up to about 13 s (the last bucket, +Inf, is implicit).
var latencyBounds = func() []float64 {
	b := make([]float64, 18)
	for i := range b {
		b[i] = 0.0001 * math.Pow(2, float64(i))
	}
	return b
}()

// LatencyBuckets returns the upper bounds, in seconds, of the buckets of
// ToolLatency.Buckets: 0.1 ms doubling up to about 13 s.
func LatencyBuckets() []float64 { return append([]float64(nil), latencyBounds...) }

// ToolLatency is a histogram of one tool's execution times.
type ToolLatency struct {
	Count   uint64
	Seconds float64 // the sum of the execution times
	// Buckets[i] counts the calls that took at most LatencyBuckets()[i]
	// seconds (cumulative, as Prometheus histograms are).
	Buckets []uint64
}

// latencyHistogram counts execution times; safe for concurrent use.
type latencyHistogram struct {
	counts []atomic.Uint64 // per bucket (not cumulative); the last is +Inf
	count  atomic.Uint64
	micros atomic.Int64
}

func newLatencyHistogram() *latencyHistogram {
	return &latencyHistogram{counts: make([]atomic.Uint64, len(latencyBounds)+1)}
}

func (h *latencyHistogram) observe(d time.Duration) {
	i := sort.SearchFloat64s(latencyBounds, d.Seconds())
	h.counts[i].Add(1)
	h.micros.Add(d.Microseconds())
	h.count.Add(1)
}

// snapshot reads the histogram; under concurrent observes the buckets and
// the count may differ by the calls in progress, never by more.
func (h *latencyHistogram) snapshot() ToolLatency {
	out := ToolLatency{Buckets: make([]uint64, len(latencyBounds))}
	var cum uint64
	for i := range latencyBounds {
		cum += h.counts[i].Load()
		out.Buckets[i] = cum
	}
	out.Count = max(h.count.Load(), cum)
	out.Seconds = float64(h.micros.Load()) / 1e6
	return out
}

func (e *Executor) latencyStats() map[string]ToolLatency {
	out := make(map[string]ToolLatency, len(e.latency))
	for name, h := range e.latency {
		out[name] = h.snapshot()
	}
	return out
}
