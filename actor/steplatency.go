package actor

import (
	"sort"
	"time"
)

// stepLatencyBuckets is the number of bounds of stepLatencyBounds.
const stepLatencyBuckets = 17

// stepLatencyBounds are the upper bounds, in seconds, of the buckets of
// StepLatency: 0.25 ms doubling up to about 16 s (the last bucket, +Inf, is
// implicit).
var stepLatencyBounds = func() []float64 {
	b := make([]float64, stepLatencyBuckets)
	for i := range b {
		b[i] = 0.00025 * float64(int(1)<<i)
	}
	return b
}()

// StepLatencyBuckets returns the upper bounds, in seconds, of
// StepLatency's buckets: 0.25 ms doubling up to about 16 s.
func StepLatencyBuckets() []float64 { return append([]float64(nil), stepLatencyBounds...) }

// StepLatency is a histogram of the wall times of the Steps that ran the
// model (prefill of the sequences admitted, one batched decode, sampling).
// It is a value: copying it copies the counts.
type StepLatency struct {
	Count uint64
	Sum   time.Duration
	// Counts[i] counts the steps that took at most StepLatencyBuckets()[i]
	// seconds and more than the bound before (not cumulative); the last
	// counts those over every bound.
	Counts [stepLatencyBuckets + 1]uint64
}

// observe counts one step of d.
func (h *StepLatency) observe(d time.Duration) {
	h.Counts[sort.SearchFloat64s(stepLatencyBounds, d.Seconds())]++
	h.Count++
	h.Sum += d
}

// Add adds o's counts to h (the steps of two engines, e.g. before and after
// a hot reload).
func (h *StepLatency) Add(o StepLatency) {
	for i := range h.Counts {
		h.Counts[i] += o.Counts[i]
	}
	h.Count += o.Count
	h.Sum += o.Sum
}

// Cumulative returns the count of steps at most each bound of
// StepLatencyBuckets(), as Prometheus histograms count.
func (h StepLatency) Cumulative() []uint64 {
	out := make([]uint64, len(stepLatencyBounds))
	var cum uint64
	for i := range out {
		cum += h.Counts[i]
		out[i] = cum
	}
	return out
}
