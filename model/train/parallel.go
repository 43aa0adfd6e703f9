package train

import (
	"runtime"
	"sync"
)

// The per-row passes (norms, activations, softmaxes, rotary) split their
// rows, and the column sums (norm and bias gradients, the embedding's
// gradient) their columns, into contiguous chunks run on GOMAXPROCS
// goroutines. Every output element is computed by exactly one goroutine, in
// the same order of operations as one goroutine would, so results do not
// depend on the chunking or on scheduling: they are bit-identical to a
// serial pass.

// minChunk is the smallest chunk worth a goroutine, in floats touched.
const minChunk = 1 << 14

// parallelRange runs fn over [0, n) split into at most GOMAXPROCS contiguous
// chunks [lo, hi), each of at least grain indices (≥ 1), and returns when
// all have finished. Each index lies in exactly one chunk.
func parallelRange(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	workers := min(runtime.GOMAXPROCS(0), (n+max(grain, 1)-1)/max(grain, 1))
	if workers <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { fn(w*n/workers, (w+1)*n/workers) })
	}
	fn(0, n/workers)
	wg.Wait()
}

// rowGrain is the grain of parallelRange over rows of width floats.
func rowGrain(width int) int { return max(1, minChunk/max(width, 1)) }

// parallelRows runs fn over chunks of n rows of width floats.
func parallelRows(n, width int, fn func(lo, hi int)) { parallelRange(n, rowGrain(width), fn) }

// parallelCols runs fn over chunks of the columns of an [n, d] matrix, for
// sums over its rows (each column summed by one goroutine, rows in order).
func parallelCols(n, d int, fn func(lo, hi int)) {
	parallelRange(d, max(1, minChunk/max(n, 1)), fn)
}

// seqWorkers is the number of goroutines parallelSeqs runs for n sequences.
func seqWorkers(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n)) }

// parallelSeqs runs fn for every sequence index over seqWorkers(n)
// goroutines, worker w taking sequences w, w+workers, …; each call writes
// only its own sequence's rows (and worker w's scratch), so results do not
// depend on order.
func parallelSeqs(n int, fn func(worker, s int)) {
	workers := seqWorkers(n)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for s := w; s < n; s += workers {
				fn(w, s)
			}
		})
	}
	wg.Wait()
}
