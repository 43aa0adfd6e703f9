package actor

import (
	"slices"
	"testing"
	"time"
)

// observe puts a step in the first bucket whose bound it does not exceed
// (over every bound: the implicit +Inf one), Cumulative counts as Prometheus
// does, and Add sums two engines' histograms.
func TestStepLatency(t *testing.T) {
	bounds := StepLatencyBuckets()
	if len(bounds) != stepLatencyBuckets || bounds[0] != 0.00025 || bounds[len(bounds)-1] != 0.00025*65536 {
		t.Fatalf("bounds %v", bounds)
	}
	var h StepLatency
	for _, d := range []time.Duration{100 * time.Microsecond, 250 * time.Microsecond, 300 * time.Microsecond, 20 * time.Second} {
		h.observe(d)
	}
	cum := h.Cumulative()
	if h.Count != 4 || h.Sum != 20*time.Second+650*time.Microsecond || cum[0] != 2 || cum[1] != 3 || cum[len(cum)-1] != 3 {
		t.Errorf("count %d sum %v cumulative %v", h.Count, h.Sum, cum)
	}
	other := h
	h.observe(time.Millisecond)
	if other.Count != 4 || other.Counts == h.Counts {
		t.Errorf("a copy shares counts with the original: %+v", other)
	}
	other.Add(h)
	if other.Count != 9 || !slices.Equal(other.Cumulative()[:2], []uint64{4, 6}) {
		t.Errorf("Add: count %d cumulative %v", other.Count, other.Cumulative())
	}
}
