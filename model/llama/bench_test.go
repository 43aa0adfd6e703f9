package llama

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	ortgo "github.com/yalue/onnxruntime_go"
)

// BenchmarkSmolLM2Decode loads the random SmolLM2-135M-shaped folder that
// `make bench-models` builds (TOOLRL_BENCH_MODEL names it), checks ORT against
// the Go reference on it, and times one decode step (batch 1 and 8, 32 cached
// tokens) in both, reporting ms per step and the Go/ORT ratio of one run.
func BenchmarkSmolLM2Decode(b *testing.B) {
	dir := os.Getenv("TOOLRL_BENCH_MODEL")
	if dir == "" {
		b.Skip("TOOLRL_BENCH_MODEL not set (make bench-models sets it)")
	}
	cfg, err := LoadConfig(dir)
	if err != nil {
		b.Fatal(err)
	}
	// The folder was built with --seed 1; regenerate the same weights.
	w, err := RandomWeights(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	ref, err := NewReference(cfg, w)
	if err != nil {
		b.Fatal(err)
	}
	// One ORT thread, as in the tests: the Go side is the comparison, and a
	// spinning thread pool on a shared machine measures the neighbours.
	m := newORTSession(b, cfg, func(in, out []string, opts *ortgo.SessionOptions) (*ortgo.DynamicAdvancedSession, error) {
		return ortgo.NewDynamicAdvancedSession(filepath.Join(dir, ModelFile), in, out, opts)
	})

	for _, batch := range []int{1, 8} {
		var prompts [][]int64
		for i := 0; i < batch; i++ {
			prompts = append(prompts, tokens(32, ByteVocabSize, int64(i)))
		}
		ortPre := m.run(b, Inputs{InputIDs: prompts}, nil)
		refPre, err := ref.Forward(Inputs{InputIDs: prompts}, nil)
		if err != nil {
			b.Fatal(err)
		}
		diff := maxAbsDiff(ortPre.Logits, refPre.Logits)
		step := make([][]int64, batch)
		for i := range step {
			step[i] = []int64{42}
		}
		b.Run("batch"+itoa(batch), func(b *testing.B) {
			var ortTime, refTime time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				m.run(b, Inputs{InputIDs: step}, ortPre.Present)
				t1 := time.Now()
				if _, err := ref.Forward(Inputs{InputIDs: step}, refPre.Present); err != nil {
					b.Fatal(err)
				}
				ortTime += t1.Sub(t0)
				refTime += time.Since(t1)
			}
			n := float64(b.N)
			b.ReportMetric(diff, "prefill_maxdiff")
			b.ReportMetric(ortTime.Seconds()*1e3/n, "ort_ms/step")
			b.ReportMetric(refTime.Seconds()*1e3/n, "go_ms/step")
			b.ReportMetric(refTime.Seconds()/ortTime.Seconds(), "go/ort")
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
