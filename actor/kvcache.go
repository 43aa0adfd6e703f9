package actor

import (
	"runtime"
	"sync"
)

// kvBlock holds the key/value cache of rows sequences for every layer, in
// the model's layout [rows, kvHeads, cols, headDim] per layer, as raw bytes
// (float32 or float16). Its buffers are reused across steps: reshape only
// allocates when the new shape needs more room than it has.
type kvBlock struct {
	rows, cols int
	keys       [][]byte // per layer
	values     [][]byte // per layer
}

// reshape sets the block's shape, growing the buffers when needed. Contents
// are not preserved.
func (b *kvBlock) reshape(l *ioLayout, rows, cols int) {
	need := rows * l.kvHeads * cols * l.headDim * l.kvElem
	if b.keys == nil {
		b.keys = make([][]byte, l.layers)
		b.values = make([][]byte, l.layers)
	}
	for i := range b.keys {
		if cap(b.keys[i]) < need {
			// Half again as much: the cache grows by a column a step, and a
			// reallocation costs fresh pages.
			b.keys[i] = make([]byte, need+need/2)
			b.values[i] = make([]byte, need+need/2)
		}
		b.keys[i] = b.keys[i][:cap(b.keys[i])]
		b.values[i] = b.values[i][:cap(b.values[i])]
	}
	b.rows, b.cols = rows, cols
}

// span is a half-open range of cache columns.
type span struct{ from, to int }

func (s span) len() int { return s.to - s.from }

// rowSource is one row of a block and the columns of it that hold real
// (unpadded) cache entries, in order.
type rowSource struct {
	blk   *kvBlock
	row   int
	spans [2]span // the second may be empty
}

func (r rowSource) len() int { return r.spans[0].len() + r.spans[1].len() }

// copyRow writes src's real columns, compacted, into dst's row at columns
// [at, at+src.len()), for every layer and head, and zeroes dst's columns
// before at (left padding; zero rather than stale values so that masked
// positions can never hold a NaN).
func copyRow(l *ioLayout, dst *kvBlock, dstRow, at int, src rowSource) {
	colBytes := l.headDim * l.kvElem
	forLayers(l.layers, 2*l.layers*l.kvHeads*(at+src.len())*colBytes, func(layer int) {
		for kv := 0; kv < 2; kv++ {
			d := dst.keys[layer]
			if kv == 1 {
				d = dst.values[layer]
			}
			var s []byte
			if src.len() > 0 {
				s = src.blk.keys[layer]
				if kv == 1 {
					s = src.blk.values[layer]
				}
			}
			for h := 0; h < l.kvHeads; h++ {
				dOff := ((dstRow*l.kvHeads + h) * dst.cols) * colBytes
				clear(d[dOff : dOff+at*colBytes])
				dOff += at * colBytes
				sBase := ((src.row*l.kvHeads + h) * src.blk.cols) * colBytes
				for _, sp := range src.spans {
					if sp.len() == 0 {
						continue
					}
					n := copy(d[dOff:dOff+sp.len()*colBytes], s[sBase+sp.from*colBytes:sBase+sp.to*colBytes])
					dOff += n
				}
			}
		}
	})
}

// parallelCopyBytes is the size from which a cache copy is split by layer
// across goroutines: one core of the development machine moves about
// 6 GB/s, two about 10 GB/s. A 135M-model row at 100 columns is 4.6 MB.
const parallelCopyBytes = 1 << 20

// forLayers calls f for every layer, on up to GOMAXPROCS goroutines when the
// copy moves size bytes in all (each goroutine takes every n-th layer).
func forLayers(layers, size int, f func(layer int)) {
	workers := min(runtime.GOMAXPROCS(0), layers, size/parallelCopyBytes)
	if workers <= 1 {
		for layer := 0; layer < layers; layer++ {
			f(layer)
		}
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for layer := w; layer < layers; layer += workers {
				f(layer)
			}
		})
	}
	wg.Wait()
}

// extract copies one row's real columns into a new single-row block.
func extract(l *ioLayout, src rowSource) *kvBlock {
	b := &kvBlock{}
	b.keys = make([][]byte, l.layers)
	b.values = make([][]byte, l.layers)
	n := src.len()
	size := l.kvHeads * n * l.headDim * l.kvElem
	for i := range b.keys {
		b.keys[i] = make([]byte, max(size, 1))
		b.values[i] = make([]byte, max(size, 1))
	}
	b.rows, b.cols = 1, n
	copyRow(l, b, 0, 0, src)
	return b
}

// moveRows compacts the block in place: row i takes the contents of row
// from[i], for every layer. Every from[i] is either i or a row at or past
// len(from) (see Engine.survivors), so no row is read after being written.
func (b *kvBlock) moveRows(l *ioLayout, from []int) {
	rowBytes := l.kvHeads * b.cols * l.headDim * l.kvElem
	moved := 0
	for i, r := range from {
		if i != r {
			moved++
		}
	}
	forLayers(l.layers, 2*l.layers*moved*rowBytes, func(layer int) {
		for _, buf := range [2][]byte{b.keys[layer], b.values[layer]} {
			for i, r := range from {
				if i != r {
					copy(buf[i*rowBytes:(i+1)*rowBytes], buf[r*rowBytes:(r+1)*rowBytes])
				}
			}
		}
	})
}

// rowView returns row r of the block as a one-row block sharing its memory.
func (b *kvBlock) rowView(l *ioLayout, r int) *kvBlock { return b.rowsView(l, r, 1) }

// rowsView returns rows [r, r+n) of the block as an n-row block sharing its
// memory (rows are outermost, so they are contiguous).
func (b *kvBlock) rowsView(l *ioLayout, r, n int) *kvBlock {
	rowBytes := l.kvHeads * b.cols * l.headDim * l.kvElem
	v := &kvBlock{rows: n, cols: b.cols, keys: make([][]byte, l.layers), values: make([][]byte, l.layers)}
	for i := range v.keys {
		v.keys[i] = b.keys[i][r*rowBytes : (r+n)*rowBytes]
		v.values[i] = b.values[i][r*rowBytes : (r+n)*rowBytes]
	}
	return v
}
