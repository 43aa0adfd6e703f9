package tools

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestExecutorLatencyStats: the calls that ran are counted per registry tool
// with their times; a call of an unknown tool or one that failed validation
// is not (it never ran).
func TestExecutorLatencyStats(t *testing.T) {
	reg := newReg(t, reg1{NewCalculator(calcLimits()), Settings{}})
	ex := NewExecutor(reg, ExecutorOptions{Logger: quiet})
	ctx := context.Background()
	ex.Execute(ctx, Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"1+1"}`)})
	ex.Execute(ctx, Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"1/0"}`)})
	ex.Execute(ctx, Call{Name: "made-up-name", Arguments: json.RawMessage(`{}`)})
	st := ex.Stats()
	if len(st.Latency) != 1 {
		t.Fatalf("latency for %d tools, want the registry's 1: %v", len(st.Latency), st.Latency)
	}
	l := st.Latency["calculator"]
	if l.Count != 2 || int64(l.Count) != st.Calls {
		t.Errorf("calculator latency count %d, want 2 (Stats.Calls %d)", l.Count, st.Calls)
	}
	bounds := LatencyBuckets()
	if len(l.Buckets) != len(bounds) {
		t.Fatalf("%d buckets, want %d", len(l.Buckets), len(bounds))
	}
	for i := 1; i < len(l.Buckets); i++ {
		if l.Buckets[i] < l.Buckets[i-1] {
			t.Fatalf("buckets not cumulative: %v", l.Buckets)
		}
	}
	if last := l.Buckets[len(l.Buckets)-1]; last != 2 {
		t.Errorf("%d calls under %gs, want 2 (a calculator call is fast)", last, bounds[len(bounds)-1])
	}
	if l.Seconds < 0 || l.Seconds > 1 {
		t.Errorf("sum %gs for two calculator calls", l.Seconds)
	}
}

// TestLatencyHistogramBuckets: a time lands in the first bucket whose bound
// it does not exceed, and past the last bound only in the count.
func TestLatencyHistogramBuckets(t *testing.T) {
	h := newLatencyHistogram()
	h.observe(50 * time.Microsecond)  // ≤ 0.1 ms
	h.observe(100 * time.Microsecond) // = 0.1 ms: the first bucket too
	h.observe(300 * time.Microsecond) // ≤ 0.4 ms
	h.observe(time.Minute)            // +Inf
	s := h.snapshot()
	if s.Count != 4 || s.Buckets[0] != 2 || s.Buckets[1] != 2 || s.Buckets[2] != 3 || s.Buckets[len(s.Buckets)-1] != 3 {
		t.Errorf("snapshot %+v", s)
	}
	if want := 60.00045; s.Seconds < want-1e-9 || s.Seconds > want+1e-9 {
		t.Errorf("sum %g, want %g", s.Seconds, want)
	}
}
