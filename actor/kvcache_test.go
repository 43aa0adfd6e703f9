package actor

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestBigCacheCopies runs copyRow and moveRows on rows big enough to be
// split across goroutines and checks every byte against a plain copy.
func TestBigCacheCopies(t *testing.T) {
	l := &ioLayout{layers: 5, kvHeads: 3, headDim: 64, kvElem: 4}
	const rows, cols = 4, 700 // 4 × 3 × 700 × 256 B = 2.2 MB a layer
	rng := rand.New(rand.NewPCG(5, 6))
	src := &kvBlock{}
	src.reshape(l, rows, cols)
	for i := range src.keys {
		for j := range src.keys[i] {
			src.keys[i][j], src.values[i][j] = byte(rng.Uint32()), byte(rng.Uint32())
		}
	}
	colBytes := l.headDim * l.kvElem
	// copyRow: row 2's columns [100, 600) and [650, 700), compacted, into
	// row 1 of a wider block at column 50.
	source := rowSource{blk: src, row: 2, spans: [2]span{{100, 600}, {650, 700}}}
	if 2*l.layers*l.kvHeads*(50+source.len())*colBytes < 2*parallelCopyBytes {
		t.Fatal("the copy is too small to be split")
	}
	dst := &kvBlock{}
	dst.reshape(l, 2, 600)
	for i := range dst.keys {
		for j := range dst.keys[i] {
			dst.keys[i][j], dst.values[i][j] = 0xAA, 0xAA
		}
	}
	copyRow(l, dst, 1, 50, source)
	for layer := 0; layer < l.layers; layer++ {
		for kv, pair := range [2][2][]byte{{dst.keys[layer], src.keys[layer]}, {dst.values[layer], src.values[layer]}} {
			d, s := pair[0], pair[1]
			for h := 0; h < l.kvHeads; h++ {
				var want []byte
				want = append(want, make([]byte, 50*colBytes)...)
				base := (2*l.kvHeads + h) * cols * colBytes
				want = append(want, s[base+100*colBytes:base+600*colBytes]...)
				want = append(want, s[base+650*colBytes:base+700*colBytes]...)
				off := (1*l.kvHeads + h) * 600 * colBytes
				if !bytes.Equal(d[off:off+600*colBytes], want) {
					t.Fatalf("copyRow: layer %d kv %d head %d differs", layer, kv, h)
				}
			}
		}
	}
	// moveRows: row 0 takes row 3, row 1 keeps its contents.
	want := make([][]byte, l.layers)
	rowBytes := l.kvHeads * cols * colBytes
	for layer := range want {
		want[layer] = append(append([]byte{}, src.keys[layer][3*rowBytes:4*rowBytes]...), src.keys[layer][rowBytes:2*rowBytes]...)
	}
	src.moveRows(l, []int{3, 1})
	for layer := range want {
		if !bytes.Equal(src.keys[layer][:2*rowBytes], want[layer]) {
			t.Fatalf("moveRows: layer %d differs", layer)
		}
	}
}
