package actor

import (
	"fmt"
	"sort"
)

// The engine's batch for a fused graph (ioLayout.fused). GroupQueryAttention
// reads row b's cache as columns [0, seqlens_k[b]] of a buffer
// [B, kvHeads, capacity, headDim] per layer and writes the new columns in
// place, so the layout differs from optimum's left-padded one:
//
//   - rows are right-aligned: row r's cached tokens are columns
//     [0, lens[r]), and the columns past them are scratch;
//   - a decode Run binds e.cur as both past and present: nothing is copied
//     per step, and the buffer has spare columns (capacity) so that rows grow
//     into it; it is re-laid out only when a row outgrows it or the batch
//     changes beyond what moving rows in place handles;
//   - prefills run per admitted item with batch 1 over that row's view of
//     e.cur (GroupQueryAttention takes a second prompt on top of a cache only
//     at batch 1), and a group's other samples copy the prefilled row; the
//     injections of several resumed sequences rejoining at once run instead
//     as decode-shaped Runs, one token column each, over their rows, when
//     that takes fewer Runs (prefillFusedSteps).

// fusedCapacity is the column capacity a re-layout allocates for rows whose
// longest needs need columns: half again as much, rounded up to 64 columns,
// within the engine's length limit, so that rows decode for a while before
// the buffer must grow.
func (e *Engine) fusedCapacity(need int) int {
	c := (need + need/2 + 63) / 64 * 64
	return max(need, min(c, e.maxLen))
}

// fusedItem is one admitted item of a re-layout: its rows [lead,
// lead+rows) of the batch, its existing cache (resumed) and the tokens to
// prefill on top of it.
type fusedItem struct {
	lead, rows int
	src        rowSource
	toks       []int32
}

// repackFused lays out the decode batch for survivors followed by the
// admitted work, prefilling the admitted work into its rows.
func (e *Engine) repackFused(survivors []*Sequence, survivorRows []int, admitted []workItem) error {
	l := &e.pol.io
	// Rows still held in the buffer are about to be moved over: copy them
	// out first.
	for _, s := range e.held {
		if s.held {
			s.cache = rowSource{blk: extract(l, s.cache), spans: [2]span{{0, s.cache.len()}}}
			s.held = false
		}
	}
	e.held = e.held[:0]

	// The new batch: survivors, then each admitted item's rows, its first
	// row the one its prefill runs in.
	rows := append([]*Sequence(nil), survivors...)
	lens := make([]int, len(survivors), len(survivors)+len(admitted))
	need := 0
	for i, r := range survivorRows {
		lens[i] = e.lens[r]
		need = max(need, lens[i]+1)
	}
	// Resumed sequences with tokens to prefill go last, longest first: their
	// rows are then contiguous, and the rows still prefilling at any column
	// are a prefix of them (see prefillFusedSteps).
	order := make([]workItem, 0, len(admitted))
	var resumed []workItem
	for _, w := range admitted {
		if w.seq != nil && len(w.seq.inject) > 0 {
			resumed = append(resumed, w)
		} else {
			order = append(order, w)
		}
	}
	sort.SliceStable(resumed, func(i, j int) bool { return len(resumed[i].seq.inject) > len(resumed[j].seq.inject) })
	order = append(order, resumed...)
	items := make([]fusedItem, 0, len(admitted))
	for _, w := range order {
		it := fusedItem{lead: len(rows)}
		if w.grp != nil {
			it.toks = w.grp.prompt[:len(w.grp.prompt)-1]
			for _, s := range w.grp.seqs {
				if s.state == StateQueued {
					rows = append(rows, s)
				}
			}
		} else {
			s := w.seq
			it.src = s.cache
			it.toks = s.tokens[len(s.tokens)-len(s.inject)-1 : len(s.tokens)-1]
			rows = append(rows, s)
		}
		it.rows = len(rows) - it.lead
		n := it.src.len() + len(it.toks)
		for range it.rows {
			lens = append(lens, n)
		}
		need = max(need, n+1)
		items = append(items, it)
	}

	rowBytes := func(cols int) int { return l.kvHeads * cols * l.headDim * l.kvElem }
	if e.cur.keys != nil && e.cur.cols >= need && len(rows)*rowBytes(e.cur.cols) <= cap(e.cur.keys[0]) {
		e.cur.moveRows(l, survivorRows)
		e.cur.rows = len(rows)
		e.stats.InPlaceRepacks++
	} else {
		e.spare.reshape(l, len(rows), e.fusedCapacity(need))
		for i, r := range survivorRows {
			copyRow(l, e.spare, i, 0, rowSource{blk: e.cur, row: r, spans: [2]span{{0, e.lens[r]}}})
		}
		e.cur, e.spare = e.spare, e.cur
	}
	// The resumed items' injections: one Run per item (a prompt on top of
	// its cache), or, when that is fewer Runs, one decode-shaped Run per
	// column over all their rows.
	steps := len(items) - len(resumed)
	if len(resumed) > 0 && len(resumed) > len(items[steps].toks) {
		for _, it := range items[steps:] {
			copyRow(l, e.cur, it.lead, 0, it.src)
		}
		if err := e.prefillFusedSteps(items[steps].lead, items[steps:]); err != nil {
			return err
		}
		items = items[:steps]
	}
	for _, it := range items {
		if it.src.len() > 0 {
			copyRow(l, e.cur, it.lead, 0, it.src)
		}
		if len(it.toks) > 0 {
			if err := e.prefillFused(it.lead, it.src.len(), it.toks); err != nil {
				return err
			}
		}
		lead := rowSource{blk: e.cur, row: it.lead, spans: [2]span{{0, lens[it.lead]}}}
		for r := it.lead + 1; r < it.lead+it.rows; r++ {
			copyRow(l, e.cur, r, 0, lead)
		}
	}
	for _, s := range rows {
		s.state = StateRunning
		s.cache = rowSource{}
		s.inject = nil
	}
	e.rows, e.lens, e.pads = rows, lens, nil
	e.dirty = false
	e.stats.Repacks++
	return nil
}

// prefillFused runs toks on top of the past cached columns of row r of
// e.cur, in Runs of at most the prefill budget's columns.
func (e *Engine) prefillFused(r, past int, toks []int32) error {
	l := &e.pol.io
	view := e.cur.rowView(l, r)
	chunk := max(1, e.prefillBudget()/(4*l.vocab))
	rb := &e.prefillBuf
	for from := 0; from < len(toks); from += chunk {
		to := min(from+chunk, len(toks))
		ids, mask, _ := rb.prepare(1, to-from, past+from)
		for j := range ids {
			ids[j] = int64(toks[from+j])
		}
		for c := range mask {
			mask[c] = 1
		}
		took, err := e.pol.runFused(rb, view)
		e.stats.RunTime += took
		e.stats.PrefillRuns++
		if err != nil {
			return fmt.Errorf("prefill: %w", err)
		}
	}
	e.stats.PrefillTokens += int64(len(toks))
	return nil
}

// prefillFusedSteps prefills the injections of resumed items whose rows are
// contiguous from row r0 (one row each, longest injection first), one token
// column per Run: Run j feeds token j of every item that has one, a decode
// step over the prefix of rows still prefilling. GroupQueryAttention runs a
// prompt on top of a cache only at batch 1, so this takes max(len) Runs
// where a prefill per item takes len(items).
func (e *Engine) prefillFusedSteps(r0 int, items []fusedItem) error {
	l := &e.pol.io
	rb := &e.prefillBuf
	for j := 0; j < len(items[0].toks); j++ {
		B := 0
		for B < len(items) && len(items[B].toks) > j {
			B++
		}
		T := 0
		for _, it := range items[:B] {
			T = max(T, it.src.len()+j+1)
		}
		ids, mask, _ := rb.prepare(B, 1, T-1)
		for i, it := range items[:B] {
			ids[i] = int64(it.toks[j])
			m := mask[i*T : (i+1)*T]
			for c := range m {
				if c <= it.src.len()+j {
					m[c] = 1
				} else {
					m[c] = 0
				}
			}
		}
		took, err := e.pol.runFused(rb, e.cur.rowsView(l, r0, B))
		e.stats.RunTime += took
		e.stats.PrefillRuns++
		if err != nil {
			return fmt.Errorf("prefill: %w", err)
		}
		e.stats.PrefillTokens += int64(B)
	}
	return nil
}

// decodeFused feeds every row's pending token, appending its column to the
// row in place, samples the next one, and reports the rows that paused or
// finished.
func (e *Engine) decodeFused() ([]Event, error) {
	l := &e.pol.io
	B := len(e.rows)
	T := 0
	for _, n := range e.lens {
		T = max(T, n+1)
	}
	if T > e.cur.cols {
		// A row outgrew the buffer: re-lay it out with room to spare.
		e.spare.reshape(l, B, e.fusedCapacity(T))
		for r, n := range e.lens {
			copyRow(l, e.spare, r, 0, rowSource{blk: e.cur, row: r, spans: [2]span{{0, n}}})
		}
		e.cur, e.spare = e.spare, e.cur
	}
	rb := &e.decodeBuf
	ids, mask, _ := rb.prepare(B, 1, T-1)
	for r, s := range e.rows {
		ids[r] = int64(s.tokens[len(s.tokens)-1])
		m := mask[r*T : (r+1)*T]
		for c := range m {
			if c <= e.lens[r] {
				m[c] = 1
			} else {
				m[c] = 0
			}
		}
	}
	took, err := e.pol.runFused(rb, e.cur)
	e.stats.RunTime += took
	e.stats.DecodeRuns++
	e.stats.RowSteps += int64(B)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	for r := range e.lens {
		e.lens[r]++
	}

	e.sampleRows(rb.logits)
	var events []Event
	for r, s := range e.rows {
		kind := e.advance(s, e.draws[r])
		if kind == 0 {
			continue
		}
		e.dirty = true
		if kind == EventToolCall {
			// Held in place until the next re-layout copies it out.
			s.cache = rowSource{blk: e.cur, row: r, spans: [2]span{{0, e.lens[r]}}}
			s.held = true
			e.held = append(e.held, s)
		}
		events = append(events, Event{Kind: kind, Seq: s})
	}
	return events, nil
}
