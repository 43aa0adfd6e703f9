package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// benchSet is one tokenizer with the corpus encoded.
type benchSet struct {
	tok    *Tokenizer
	corpus []string
	ids    [][]int32
	bytes  int64
	tokens int64
}

func loadBenchSet(b testing.TB, e goldenEntry) *benchSet {
	tok := loadGoldenTokenizer(b, e)
	s := &benchSet{tok: tok, corpus: readCorpus(b)}
	for _, text := range s.corpus {
		ids, err := tok.Encode(text, false)
		if err != nil {
			b.Fatal(err)
		}
		s.ids = append(s.ids, ids)
		s.bytes += int64(len(text))
		s.tokens += int64(len(ids))
	}
	return s
}

func (s *benchSet) encode(b *testing.B) {
	b.SetBytes(s.bytes)
	b.ReportAllocs()
	for b.Loop() {
		for _, text := range s.corpus {
			if _, err := s.tok.Encode(text, false); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(s.tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func (s *benchSet) decode(b *testing.B) {
	b.SetBytes(s.bytes)
	b.ReportAllocs()
	for b.Loop() {
		for _, ids := range s.ids {
			if _, err := s.tok.Decode(ids, false); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(s.tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func (s *benchSet) stream(b *testing.B) {
	b.SetBytes(s.bytes)
	b.ReportAllocs()
	for b.Loop() {
		for _, ids := range s.ids {
			sd := s.tok.NewStreamDecoder(false)
			for _, id := range ids {
				if _, err := sd.Add(id); err != nil {
					b.Fatal(err)
				}
			}
			sd.Flush()
		}
	}
	b.ReportMetric(float64(s.tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// streamAllocsPerToken measures allocations per Add over the corpus (one
// decoder per string, decoder creation included).
func (s *benchSet) streamAllocsPerToken() float64 {
	allocs := testing.AllocsPerRun(1, func() {
		for _, ids := range s.ids {
			sd := s.tok.NewStreamDecoder(false)
			for _, id := range ids {
				sd.Add(id)
			}
			sd.Flush()
		}
	})
	return allocs / float64(s.tokens)
}

func forEachBenchTokenizer(b *testing.B, f func(b *testing.B, s *benchSet)) {
	for _, e := range listGoldens(b) {
		if e.patch != "" {
			continue
		}
		b.Run(e.name, func(b *testing.B) { f(b, loadBenchSet(b, e)) })
	}
}

func BenchmarkEncode(b *testing.B) {
	forEachBenchTokenizer(b, func(b *testing.B, s *benchSet) { s.encode(b) })
}

func BenchmarkDecode(b *testing.B) {
	forEachBenchTokenizer(b, func(b *testing.B, s *benchSet) { s.decode(b) })
}

func BenchmarkStreamDecode(b *testing.B) {
	forEachBenchTokenizer(b, func(b *testing.B, s *benchSet) {
		s.stream(b)
		b.ReportMetric(s.streamAllocsPerToken(), "allocs/token")
	})
}

// fastestPass returns the seconds of the fastest of repeated passes of f (one
// warm-up, then at least 3 passes and 1 s), as scripts/tokenizer/bench.js
// does for the reference.
func fastestPass(f func()) float64 {
	f()
	start := time.Now()
	best := math.Inf(1)
	for n := 0; n < 3 || time.Since(start) < time.Second; n++ {
		t0 := time.Now()
		f()
		best = math.Min(best, time.Since(t0).Seconds())
	}
	return best
}

// TestBenchVsReference measures this package and the npm reference
// (scripts/tokenizer/bench.js) on the same corpus in one run and prints the
// ratios. It only runs with TOOLRL_TOKENIZER_BENCH=1 (make bench-tokenizer).
func TestBenchVsReference(t *testing.T) {
	if os.Getenv("TOOLRL_TOKENIZER_BENCH") != "1" {
		t.Skip("set TOOLRL_TOKENIZER_BENCH=1 (make bench-tokenizer)")
	}
	root := repoRoot(t)
	var names []string
	sets := map[string]*benchSet{}
	for _, e := range listGoldens(t) {
		if e.patch != "" {
			continue
		}
		names = append(names, e.name)
		sets[e.name] = loadBenchSet(t, e)
	}
	cmd := exec.Command("node", append([]string{filepath.Join(root, "scripts", "tokenizer", "bench.js")}, names...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node bench.js: %v", err)
	}
	type refResult struct {
		Name    string  `json:"name"`
		EncodeS float64 `json:"encode_s"`
		DecodeS float64 `json:"decode_s"`

		EncodeBatchS float64 `json:"encode_batch_s"`
		DecodeBatchS float64 `json:"decode_batch_s"`
	}
	fmt.Printf("%-10s | %8s %10s | %8s %6s | %8s %6s | %10s | %10s %6s | %10s %6s | %8s\n",
		"tokenizer", "enc MB/s", "enc tok/s", "ref MB/s", "ratio", "batch", "ratio",
		"dec tok/s", "ref tok/s", "ratio", "batch", "ratio", "alloc/tok")
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r refResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bench.js output %q: %v", sc.Text(), err)
		}
		s := sets[r.Name]
		if s == nil {
			continue
		}
		encS := fastestPass(func() {
			for _, text := range s.corpus {
				s.tok.Encode(text, false)
			}
		})
		decS := fastestPass(func() {
			for _, ids := range s.ids {
				s.tok.Decode(ids, false)
			}
		})
		mb := float64(s.bytes) / 1e6
		tok := float64(s.tokens)
		fmt.Printf("%-10s | %8.2f %10.0f | %8.2f %5.1fx | %8.2f %5.1fx | %10.0f | %10.0f %5.1fx | %10.0f %5.1fx | %8.3f\n",
			r.Name, mb/encS, tok/encS, mb/r.EncodeS, r.EncodeS/encS, mb/r.EncodeBatchS, r.EncodeBatchS/encS,
			tok/decS, tok/r.DecodeS, r.DecodeS/decS, tok/r.DecodeBatchS, r.DecodeBatchS/decS, s.streamAllocsPerToken())
	}
	fmt.Println("Go: one goroutine, one call per string. ref: npm tokenizers, one awaited call per string; batch: one encodeBatch/decodeBatch call (Rust threads).")
	fmt.Println("Each figure is the fastest of repeated passes over the whole corpus (at least 3 passes and 1 s).")
	fmt.Println("ratio = reference seconds / Go seconds (>1: Go is faster). alloc/tok: stream decoder allocations per token, one decoder per string.")
}
