package train

import "unsafe"

// arena hands out the float buffers of one pass (the activations the
// backward pass reads and its own scratch) from one block that the model
// keeps between passes, so that once it has seen its largest batch a pass
// allocates no activation memory (no per-pass make and the memclr behind
// it). A buffer from take holds whatever the last pass left there: every
// caller overwrites it whole; zeros clears it first.
type arena[F Float] struct {
	block []F
	used  int // floats of block handed out this pass
	over  int // floats handed out past block this pass, allocated separately
}

// alignBytes aligns every buffer, from the block or beside it, to a cache
// line. Besides keeping rows off line boundaries it makes results
// reproducible: gonum's assembly kernels peel unaligned heads, and OpenBLAS
// too gives different roundings at different alignments, so a product's
// summation order depends on where its operands lie (with a plain make per
// buffer, two identical passes could differ in the last bits).
const alignBytes = 64

// alignedFloats returns n zeroed floats starting on an alignBytes boundary.
func alignedFloats[F Float](n int) []F {
	var z F
	size := int(unsafe.Sizeof(z))
	per := alignBytes / size
	s := make([]F, n+per-1)
	off := 0
	if n > 0 {
		off = (per - int(uintptr(unsafe.Pointer(&s[0]))%alignBytes)/size) % per
	}
	return s[off : off+n : off+n]
}

// take returns a buffer of n floats, aligned to alignBytes, with undefined
// contents.
func (a *arena[F]) take(n int) []F {
	var z F
	per := alignBytes / int(unsafe.Sizeof(z))
	step := (n + per - 1) / per * per
	if a.used+step <= len(a.block) {
		s := a.block[a.used : a.used+n : a.used+n]
		a.used += step
		return s
	}
	a.over += step
	return alignedFloats[F](n)
}

// zeros returns a buffer of n zeros.
func (a *arena[F]) zeros(n int) []F {
	s := a.take(n)
	clear(s)
	return s
}

// size is the block's length after the next reset.
func (a *arena[F]) size() int {
	if a.over > 0 {
		return (a.used + a.over) * 9 / 8
	}
	return len(a.block)
}

// reset frees every buffer handed out since the last reset (their users
// must be done with them) and, when the last pass needed more than the
// block, grows it to that pass's total plus an eighth, so that batches a
// little larger (a learner's micro-batches vary in length) fit without
// another growth.
func (a *arena[F]) reset() {
	if a.over > 0 {
		a.block = alignedFloats[F](a.size())
	}
	a.used, a.over = 0, 0
}

// newPass returns an empty pass holding the model's spare buffers (the last
// released pass's), or fresh ones when another pass still holds them.
func (m *ModelOf[F]) newPass() *pass[F] {
	p := m.spare
	m.spare = nil
	if p == nil {
		p = &pass[F]{}
	}
	p.reset()
	return p
}

// release gives p's buffers back to the model for its next pass; p and
// every slice of its activations must not be used afterwards. Of two
// released passes the model keeps the larger block.
func (m *ModelOf[F]) release(p *pass[F]) {
	if m.spare == nil || m.spare.arena.size() < p.arena.size() {
		m.spare = p
	}
}

// reset empties p, keeping the capacity of its slices and its arena.
func (p *pass[F]) reset() {
	p.arena.reset()
	p.n, p.maxT = 0, 0
	p.starts, p.lns, p.tokens = p.starts[:0], p.lns[:0], p.tokens[:0]
	p.rowSeq, p.rowPos = p.rowSeq[:0], p.rowPos[:0]
	p.ropes, p.rows, p.targets = p.ropes[:0], p.rows[:0], p.targets[:0]
	p.xf, p.hf, p.rf, p.hm, p.logits = nil, nil, nil, nil, nil
}
