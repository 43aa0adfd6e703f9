package learner

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/traj"
)

// calcTargetTokensPerS is the learner throughput wanted for models/calc on
// a calc-rollout batch (tokens through forward and backward per second).
const calcTargetTokensPerS = 5000

// BenchmarkLearnerUpdate measures Learner.Update with default options on a
// batch shaped like a calc rollout (8 groups × G=8, prompts of about 25
// tokens, responses of about 40 with one injected span, on-policy behaviour
// logprobs, advantages ±1). It reports tokens/s as Metrics.TokensPerS
// defines it (every token of the batch, prompt and response, per second of
// update) and gemm_share, the fraction of the CPU profile's samples whose
// stack is in the trainer's GEMM (sgemm, its packing and kernels, or gonum's
// Sgemm). Run it with GOEXPERIMENT=simd for the packed kernel (make
// bench-learner); without it the GEMM is gonum's blas32.
func BenchmarkLearnerUpdate(b *testing.B) {
	b.Run("calc", func(b *testing.B) {
		m, _, err := LoadModel("../models/calc")
		if err != nil {
			b.Fatal(err)
		}
		tps := benchUpdate(b, m, calcShapedRecords(b, m))
		verdict := "met"
		if tps < calcTargetTokensPerS {
			verdict = "not met"
		}
		b.Logf("target %d tokens/s for calc: %s (%.0f tokens/s)", calcTargetTokensPerS, verdict, tps)
	})
	// The same batch through the float64 learner (toolrl learn --precision
	// float64): forward, backward and AdamW in float64 over gonum's Dgemm.
	b.Run("calc-float64", func(b *testing.B) {
		m32, _, err := LoadModel("../models/calc")
		if err != nil {
			b.Fatal(err)
		}
		m, _, err := LoadNet("../models/calc", train.Float64)
		if err != nil {
			b.Fatal(err)
		}
		benchUpdate(b, m, calcShapedRecords(b, m32))
	})
	b.Run("tiny", func(b *testing.B) {
		cfg, err := llama.ShapeConfig("tiny")
		if err != nil {
			b.Fatal(err)
		}
		tc, err := TrainConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		w, err := llama.RandomWeights(cfg, 1)
		if err != nil {
			b.Fatal(err)
		}
		m, err := train.NewModel(tc, 0)
		if err != nil {
			b.Fatal(err)
		}
		flat := make(map[string][]float32, len(w))
		for name, t := range w {
			flat[name] = t.Data
		}
		if err := m.SetWeights(flat); err != nil {
			b.Fatal(err)
		}
		benchUpdate(b, m, calcShapedRecords(b, m))
	})
}

// calcShapedRecords is a batch shaped like a calc rollout, on-policy for m:
// 8 groups of G = 8 sharing a 22–28-token prompt, 34–46-token responses
// with one injected span of 4–7 tokens near the middle, advantages ±1.
func calcShapedRecords(b *testing.B, m *train.Model) []traj.AdvantageRecord {
	return shapedRecords(b, m, recordShape{groups: 8, size: 8, prompt: [2]int{22, 28}, response: [2]int{34, 46},
		spanAt: [2]int{11, 24}, span: [2]int{4, 7}, temp: 1, seed: 11,
		adv: func(_, i int) float32 { return float32(1 - 2*(i%2)) }})
}

// benchUpdate times b.N updates of a fresh learner on m over recs,
// profiling the CPU meanwhile, and returns tokens/s.
func benchUpdate(b *testing.B, m train.Net, recs []traj.AdvantageRecord) float64 {
	l, err := New(m, nil, 0, DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	peer := peerShapeDir(b, m, recs) // "" without -peer-dir
	var run peerRun
	var prof bytes.Buffer
	// Fails when the test binary already profiles (go test -cpuprofile):
	// the share is then left to that profile.
	profiling := pprof.StartCPUProfile(&prof) == nil
	var tokens int
	var seconds float64
	b.ResetTimer()
	for i := range b.N {
		met, err := l.Update(context.Background(), recs)
		if err != nil {
			b.Fatal(err)
		}
		tokens += met.Tokens
		seconds += met.Seconds
		if i == 0 {
			run.First = met
		}
		run.UpdateSeconds = append(run.UpdateSeconds, met.Seconds)
	}
	b.StopTimer()
	tps := float64(tokens) / seconds
	b.ReportMetric(tps, "tokens/s")
	kernel := train.KernelName()
	if m.Precision() == train.Float64 {
		kernel = "gonum-blas64"
	}
	if peer != "" {
		run.Shape, run.Kernel, run.Updates, run.Tokens = filepath.Base(peer), kernel, b.N, tokens/b.N
		run.Trained, run.Seconds, run.TokensPerS = run.First.TokensTrained, seconds, tps
		writePeerRun(b, peer, run)
	}
	b.Logf("%s, kernel %s (GOEXPERIMENT=%q), GOMAXPROCS %d; %d records, %d tokens per update; %.0f tokens/s",
		m.Precision(), kernel, goExperiment(), runtime.GOMAXPROCS(0), len(recs), tokens/b.N, tps)
	if !profiling {
		b.Logf("CPU profile already running (-cpuprofile?): no gemm_share")
		return tps
	}
	pprof.StopCPUProfile()
	p, err := profile.Parse(&prof)
	if err != nil {
		b.Fatal(err)
	}
	share, total, top := gemmShare(p)
	b.ReportMetric(share, "gemm_share")
	b.Logf("GEMM %.1f%% of %.2f CPU-s profiled; top self time outside GEMM: %s", 100*share, total, top)
	return tps
}

// gemmShare returns the fraction of the profile's CPU time whose stack is in
// the GEMM, the CPU seconds profiled, and the five functions outside the
// GEMM with the most self time.
func gemmShare(p *profile.Profile) (share, seconds float64, top string) {
	vi := len(p.SampleType) - 1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			vi = i
		}
	}
	var gemm, total int64
	self := map[string]int64{}
	for _, s := range p.Sample {
		v := s.Value[vi]
		total += v
		inGEMM := false
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function != nil && isGEMM(line.Function.Name) {
					inGEMM = true
				}
			}
		}
		if inGEMM {
			gemm += v
		} else if len(s.Location) > 0 && len(s.Location[0].Line) > 0 && s.Location[0].Line[0].Function != nil {
			self[s.Location[0].Line[0].Function.Name] += v
		}
	}
	if total == 0 {
		return 0, 0, "no samples"
	}
	names := make([]string, 0, len(self))
	for n := range self {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return self[names[i]] > self[names[j]] })
	var parts []string
	for _, n := range names[:min(5, len(names))] {
		parts = append(parts, fmt.Sprintf("%s %.1f%%", n[strings.LastIndex(n, "/")+1:], 100*float64(self[n])/float64(total)))
	}
	return float64(gemm) / float64(total), float64(total) / 1e9, strings.Join(parts, ", ")
}

// isGEMM reports whether a profiled function belongs to the GEMM: the
// trainer's gemm and sgemm (with its worker closures), packA/packB and tile
// kernels (model/train/gemm*.go, blas.go), or gonum's Sgemm and Dgemm and
// their helpers, under which gonum's f32 and f64 assembly runs.
func isGEMM(fn string) bool {
	if name, ok := strings.CutPrefix(fn, "github.com/toolrl/toolrl/model/train."); ok {
		for _, p := range []string{"gemm", "sgemm", "packA", "packB", "kernel"} {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	if name, ok := strings.CutPrefix(fn, "gonum.org/v1/gonum/blas/gonum."); ok {
		return strings.HasPrefix(name, "sgemm") || strings.Contains(name, ".Sgemm") ||
			strings.HasPrefix(name, "dgemm") || strings.Contains(name, ".Dgemm")
	}
	return false
}

// goExperiment is the GOEXPERIMENT the test binary was built with ("" when
// none).
func goExperiment() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, s := range info.Settings {
		if s.Key == "GOEXPERIMENT" {
			return s.Value
		}
	}
	return ""
}
