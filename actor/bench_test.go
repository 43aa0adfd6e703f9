package actor

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// benchPolicy loads $TOOLRL_BENCH_MODEL (e.g. the SmolLM2-135M-shaped random
// model that `make bench-models` builds) or the tiny random model.
func benchPolicy(b *testing.B) *Policy {
	b.Helper()
	dir := os.Getenv("TOOLRL_BENCH_MODEL")
	if dir == "" {
		pol, _ := loadTiny(b, 1)
		return pol
	}
	pol, err := Load(context.Background(), LoadOptions{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pol.Close() })
	return pol
}

// BenchmarkThroughput reports generated tokens/s and the Go-side overhead
// (share of wall time outside ORT Run) at several concurrencies.
func BenchmarkThroughput(b *testing.B) {
	pol := benchPolicy(b)
	for _, c := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprint("c", c), func(b *testing.B) {
			var gen int64
			var wall, run float64
			for i := 0; i < b.N; i++ {
				res, err := MeasureThroughput(context.Background(), pol, ThroughputOptions{Concurrency: c, NewTokens: 16})
				if err != nil {
					b.Fatal(err)
				}
				gen += res.Generated
				wall += res.Wall.Seconds()
				run += res.Stats.RunTime.Seconds()
			}
			b.ReportMetric(float64(gen)/wall, "tokens/s")
			b.ReportMetric(100*(wall-run)/wall, "%overhead")
		})
	}
}

// BenchmarkThroughputTools is BenchmarkThroughput with a simulated tool call
// every 8 sampled tokens answered by 6 injected tokens: the batch changes at
// almost every step.
func BenchmarkThroughputTools(b *testing.B) {
	pol := benchPolicy(b)
	for _, c := range []int{16, 64} {
		b.Run(fmt.Sprint("c", c), func(b *testing.B) {
			var gen int64
			var wall, run float64
			var st Stats
			for i := 0; i < b.N; i++ {
				res, err := MeasureThroughput(context.Background(), pol, ThroughputOptions{Concurrency: c, NewTokens: 32, PauseEvery: 8, InjectTokens: 6})
				if err != nil {
					b.Fatal(err)
				}
				gen += res.Generated
				wall += res.Wall.Seconds()
				run += res.Stats.RunTime.Seconds()
				st = res.Stats
			}
			b.ReportMetric(float64(gen)/wall, "tokens/s")
			b.ReportMetric(100*(wall-run)/wall, "%overhead")
			b.ReportMetric(float64(st.PrefillRuns)/float64(st.DecodeRuns), "prefills/step")
			b.ReportMetric(float64(st.InPlaceRepacks)/float64(max(st.Repacks, 1)), "inplace/repack")
		})
	}
}
