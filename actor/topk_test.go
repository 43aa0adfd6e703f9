package actor

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// referenceTopK is topK by sorting every id: weight descending, then id.
func referenceTopK(w []float32, k int) []int32 {
	ids := make([]int32, len(w))
	for i := range ids {
		ids[i] = int32(i)
	}
	slices.SortStableFunc(ids, func(a, b int32) int { return cmp.Compare(w[b], w[a]) })
	return ids[:k]
}

// TestTopKPathsAgree checks both top-k paths (quickselect for small
// vocabularies, heap for large ones) against a full sort, on weights with
// many ties, several vocabulary sizes and k from 1 to V.
func TestTopKPathsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var sm sampler
	for _, V := range []int{1, 2, 3, 7, 50, 64, 640, 5000} {
		for _, k := range []int{1, 2, 3, 50, V - 1, V} {
			if k < 1 || k > V {
				continue
			}
			for trial := 0; trial < 20; trial++ {
				w := make([]float32, V)
				levels := 1 + rng.IntN(2*V) // few levels: many ties
				for i := range w {
					w[i] = float32(rng.IntN(levels)) / float32(levels)
				}
				want := referenceTopK(w, k)
				sel, ok := sm.topKSelect(w, k)
				if !ok {
					t.Fatalf("V=%d k=%d: topKSelect refused finite weights", V, k)
				}
				if !slices.Equal(sel, want) {
					t.Fatalf("V=%d k=%d trial %d: select %v, want %v", V, k, trial, sel, want)
				}
				if heap := sm.topKHeap(w, k); !slices.Equal(heap, want) {
					t.Fatalf("V=%d k=%d trial %d: heap %v, want %v", V, k, trial, heap, want)
				}
			}
		}
	}
}

func TestTopKSelectRefusesNaN(t *testing.T) {
	var sm sampler
	w := []float32{0.5, float32(nan()), 0.25}
	if _, ok := sm.topKSelect(w, 2); ok {
		t.Fatal("topKSelect accepted a NaN weight")
	}
}

func nan() float64 { var z float64; return z / z }

// BenchmarkTopK compares the two top-k paths at k = 50 on random weights of
// a small and a Llama-size vocabulary, in random order and sorted ascending
// (the heap's worst case: every id displaces the root).
func BenchmarkTopK(b *testing.B) {
	for _, V := range []int{640, 4096, 49152} {
		for _, order := range []string{"random", "ascending"} {
			rng := rand.New(rand.NewPCG(1, 2))
			w := make([]float32, V)
			for i := range w {
				w[i] = float32(rng.ExpFloat64())
			}
			if order == "ascending" {
				slices.Sort(w)
			}
			var sm sampler
			b.Run(fmt.Sprintf("select/V%d/%s", V, order), func(b *testing.B) {
				for b.Loop() {
					sm.topKSelect(w, 50)
				}
			})
			b.Run(fmt.Sprintf("heap/V%d/%s", V, order), func(b *testing.B) {
				for b.Loop() {
					sm.topKHeap(w, 50)
				}
			})
		}
	}
}
