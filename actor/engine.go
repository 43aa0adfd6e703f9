package actor

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/toolrl/toolrl/traj"
)

// EngineOptions tunes an Engine. Zero values take the defaults.
type EngineOptions struct {
	// MaxBatch is the most sequences decoded together (default 64). A
	// group must fit in it whole.
	MaxBatch int
	// MaxSeqLen caps a sequence's total length (prompt + response); a
	// sequence that reaches it finishes with FinishLength. 0 means the
	// model's max_position_embeddings (or 4096 when the config has none).
	// A fused graph (see the package doc) is held to max_position_embeddings
	// whatever MaxSeqLen says: its rotary tables end there.
	MaxSeqLen int
}

// GroupRequest asks for G samples of one prompt.
type GroupRequest struct {
	// ID names the group (for example "job/prompt_id"); it is echoed by
	// Sequence.GroupID.
	ID string
	// Prompt is the prompt's token ids (chat template already applied).
	Prompt []int32
	// Seeds holds one RNG seed per sample (see SampleSeed); G = len(Seeds).
	Seeds []uint64
	// Sampling applies to every sample of the group.
	Sampling Sampling
	// NewDetector, when set, makes each sample's tool-call detector.
	NewDetector func() CallDetector
	// Forced, when set, holds per sample the token ids it samples, in order,
	// instead of drawing them (a forced-token sampler for tests and replay):
	// sample i's k-th sampled token is Forced[i][k] while k < len(Forced[i]),
	// then it samples as usual. The recorded logprob of a forced token is the
	// model's own, at the group's sampling temperature, as for a drawn one.
	Forced [][]int32
}

// EventKind says what happened to a sequence during a Step.
type EventKind int

const (
	// EventToolCall: the sequence completed a tool call and paused. Call
	// Inject with the result's tokens (or Finish) to continue.
	EventToolCall EventKind = iota + 1
	// EventFinished: the sequence ended (EOS, stop string or a length cap).
	EventFinished
)

// String names the kind ("tool_call", "finished").
func (k EventKind) String() string {
	switch k {
	case EventToolCall:
		return "tool_call"
	case EventFinished:
		return "finished"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event reports a sequence that paused or finished during a Step.
type Event struct {
	Kind EventKind
	Seq  *Sequence
}

// Stats counts an engine's work since it was made.
type Stats struct {
	Steps          int           // Step calls that ran the model
	DecodeRuns     int           // batched decode Runs
	PrefillRuns    int           // batched prefill Runs
	Repacks        int           // times the decode batch changed (rows joined or left)
	InPlaceRepacks int           // of which handled by moving rows inside the cache buffer
	SampledTokens  int64         // tokens sampled
	PrefillTokens  int64         // prompt and injected tokens prefilled (padding excluded)
	RowSteps       int64         // sum over decode Runs of the batch size
	RunTime        time.Duration // wall time inside ONNX Runtime
	StepTime       time.Duration // wall time inside Step
	StepLatency    StepLatency   // wall time of each Step that ran the model
}

// Overhead is the fraction of Step wall time spent outside ONNX Runtime.
func (s Stats) Overhead() float64 {
	if s.StepTime <= 0 {
		return 0
	}
	return float64(s.StepTime-s.RunTime) / float64(s.StepTime)
}

// Engine decodes many sequences of one policy with continuous batching. It
// has one owner: Step, AddGroup and the Sequence methods must be called from
// one goroutine (or under the caller's lock). See the package comment.
type Engine struct {
	pol      *Policy
	opts     EngineOptions
	maxLen   int
	maxTokID int32

	queue []workItem
	rows  []*Sequence // decode batch, in row order
	pads  []int       // left padding of each row in cur
	lens  []int       // fused graphs: cached columns of each row in cur, from column 0
	dirty bool        // rows changed since cur was packed

	cur, spare     *kvBlock // cur is the decode batch's cache (cols = P)
	prefillPast    *kvBlock
	prefillPresent *kvBlock
	decodeBuf      runBuffers
	prefillBuf     runBuffers
	held           []*Sequence // paused since the last re-layout, cache still in cur
	// preIDs, prePos and preMask hold a whole prefill's inputs while it
	// runs in chunks.
	preIDs, prePos, preMask []int64
	// finishedOutside are sequences that finished outside a Step (an
	// injection that reached a length cap), reported by the next Step.
	finishedOutside []Event
	samplers        []sampler // one per sampling goroutine
	draws           []draw    // this step's token per row
	stats           Stats
	closed          bool
}

type workItem struct {
	grp *group    // a new group, or
	seq *Sequence // a resumed sequence
}

type group struct {
	id       string
	prompt   []int32
	sampling Sampling
	eos      []int32
	maxStop  int
	seqs     []*Sequence
}

// NewEngine makes an engine on pol. It holds no ONNX Runtime values between
// steps; Close releases its buffers.
func NewEngine(pol *Policy, opts EngineOptions) *Engine {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 64
	}
	maxLen := opts.MaxSeqLen
	if maxLen <= 0 {
		maxLen = pol.maxPositions
		if maxLen <= 0 {
			maxLen = 4096
		}
	}
	if pol.io.fused && pol.maxPositions > 0 {
		maxLen = min(maxLen, pol.maxPositions)
	}
	return &Engine{
		pol: pol, opts: opts, maxLen: maxLen, maxTokID: pol.tok.MaxID(),
		cur: &kvBlock{}, spare: &kvBlock{}, prefillPast: &kvBlock{}, prefillPresent: &kvBlock{},
	}
}

// Close drops the engine's buffers. Sequences keep their recorded data.
func (e *Engine) Close() {
	e.closed = true
	e.cur, e.spare, e.prefillPast, e.prefillPresent = &kvBlock{}, &kvBlock{}, &kvBlock{}, &kvBlock{}
	e.decodeBuf, e.prefillBuf = runBuffers{}, runBuffers{}
	e.rows, e.queue, e.finishedOutside = nil, nil, nil
	e.pads, e.lens = nil, nil
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats { return e.stats }

// Running is the number of sequences in the decode batch.
func (e *Engine) Running() int {
	n := 0
	for _, s := range e.rows {
		if s.state == StateRunning {
			n++
		}
	}
	return n
}

// Queued is the number of sequences waiting for a batch slot.
func (e *Engine) Queued() int {
	n := 0
	for _, w := range e.queue {
		if w.grp != nil {
			n += len(w.grp.seqs)
		} else {
			n++
		}
	}
	return n
}

// Idle reports whether Step has nothing to do: no sequence running or
// queued, and no finish left to report. Paused sequences wait for the
// caller, not for Step.
func (e *Engine) Idle() bool {
	return e.Running() == 0 && len(e.queue) == 0 && len(e.finishedOutside) == 0
}

// AddGroup queues G = len(req.Seeds) samples of one prompt and returns
// their sequences (index i uses Seeds[i]). They share one prefill of the
// prompt when admitted.
func (e *Engine) AddGroup(req GroupRequest) ([]*Sequence, error) {
	if e.closed {
		return nil, fmt.Errorf("add group %q: engine is closed", req.ID)
	}
	G := len(req.Seeds)
	switch {
	case G == 0:
		return nil, fmt.Errorf("add group %q: no seeds (one per sample)", req.ID)
	case G > e.opts.MaxBatch:
		return nil, fmt.Errorf("add group %q: %d samples do not fit MaxBatch %d", req.ID, G, e.opts.MaxBatch)
	case len(req.Prompt) == 0:
		return nil, fmt.Errorf("add group %q: empty prompt", req.ID)
	case len(req.Prompt) >= e.maxLen:
		return nil, fmt.Errorf("add group %q: prompt of %d tokens leaves no room under the %d-token limit", req.ID, len(req.Prompt), e.maxLen)
	}
	V := int32(e.pol.io.vocab)
	for i, id := range req.Prompt {
		if id < 0 || id >= V {
			return nil, fmt.Errorf("add group %q: prompt token %d at position %d is outside the vocabulary [0, %d)", req.ID, id, i, V)
		}
	}
	if err := req.Sampling.Validate(); err != nil {
		return nil, fmt.Errorf("add group %q: %w", req.ID, err)
	}
	g := &group{id: req.ID, prompt: append([]int32(nil), req.Prompt...), sampling: req.Sampling}
	g.sampling.StopStrings = append([]string(nil), req.Sampling.StopStrings...)
	g.eos = req.Sampling.EOS
	if g.eos == nil {
		g.eos = e.pol.special.EOSIDs
	}
	g.eos = append([]int32(nil), g.eos...)
	for _, s := range g.sampling.StopStrings {
		g.maxStop = max(g.maxStop, len(s))
	}
	for i, seed := range req.Seeds {
		s := &Sequence{
			eng: e, group: g, index: i, seed: seed,
			rng:       newTrajectoryRNG(seed),
			decoder:   e.pol.tok.NewStreamDecoder(true),
			tokens:    append(make([]int32, 0, len(g.prompt)+64), g.prompt...),
			promptLen: len(g.prompt),
		}
		if req.NewDetector != nil {
			s.detector = req.NewDetector()
		}
		if i < len(req.Forced) {
			s.forced = req.Forced[i]
		}
		g.seqs = append(g.seqs, s)
	}
	e.queue = append(e.queue, workItem{grp: g})
	return append([]*Sequence(nil), g.seqs...), nil
}

// ErrNoRoom is returned by Sequence.Inject when the tokens would take the
// sequence past the model's context (EngineOptions.MaxSeqLen or the model's
// max_position_embeddings); the sequence stays paused, for the caller to
// finish (typically with traj.FinishLength) or to inject something shorter.
var ErrNoRoom = errors.New("the injection does not fit in the model's context")

// resume queues a paused sequence with injected tokens.
func (e *Engine) resume(s *Sequence, inj []int32) error {
	V := int32(e.pol.io.vocab)
	for i, id := range inj {
		if id < 0 || id >= V {
			return fmt.Errorf("inject into sequence %s/%d: token %d at %d is outside the vocabulary [0, %d)", s.group.id, s.index, id, i, V)
		}
	}
	if len(s.tokens)+len(inj) > e.maxLen {
		return fmt.Errorf("inject %d tokens into sequence %s/%d of %d tokens: %w (%d tokens)", len(inj), s.group.id, s.index, len(s.tokens), ErrNoRoom, e.maxLen)
	}
	s.closeModelSegment()
	if len(inj) > 0 {
		start := len(s.tokens) - s.promptLen
		s.tokens = append(s.tokens, inj...)
		for range inj {
			s.mask = append(s.mask, 0)
			s.logprobs = append(s.logprobs, 0)
		}
		text, _ := e.pol.tok.Decode(inj, true)
		s.segments = append(s.segments, traj.Segment{Kind: traj.SegmentTool, Turn: s.Turn(), Start: start, End: start + len(inj), Text: text})
	}
	// A new model turn: the per-turn cap restarts, and stop strings match
	// only text generated after the injection.
	s.turnTaken = 0
	s.tail = s.tail[:0]
	if e.capped(s) {
		// The caller learns of it like of any other finish: the next Step
		// reports it.
		s.release(traj.FinishLength)
		e.finishedOutside = append(e.finishedOutside, Event{Kind: EventFinished, Seq: s})
		return nil
	}
	s.inject = inj
	s.state = StateQueued
	e.queue = append(e.queue, workItem{seq: s})
	return nil
}

// abandon finishes a sequence on the caller's request.
func (e *Engine) abandon(s *Sequence, reason traj.FinishReason) {
	if s.state == StateRunning {
		e.dirty = true
	}
	s.closeModelSegment()
	s.release(reason)
}

// Step admits queued work, prefills it, and advances every running sequence
// by one token with one batched decode Run. It returns the sequences that
// paused at a tool call or finished during the step, in row order, after
// those that an Inject finished since the last Step (every finish is
// reported once, by a Step). With nothing to do it returns no events and no
// error. An error from ONNX
// Runtime leaves the engine's batch undefined: close the engine.
func (e *Engine) Step(ctx context.Context) ([]Event, error) {
	if e.closed {
		return nil, fmt.Errorf("step: engine is closed")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := time.Now()
	ran := false // the model ran: this step's time goes into StepLatency
	defer func() {
		d := time.Since(start)
		e.stats.StepTime += d
		if ran {
			e.stats.StepLatency.observe(d)
		}
	}()

	// Finishes that happened in Inject come first: they happened before
	// this step.
	events := e.finishedOutside
	e.finishedOutside = nil
	survivors, survivorRows := e.survivors()
	if len(survivors) != len(e.rows) {
		e.dirty = true
	}
	admitted := e.admit(len(survivors))
	if len(survivors) == 0 && len(admitted) == 0 {
		e.rows, e.pads, e.lens = nil, nil, nil
		return events, nil
	}
	e.stats.Steps++
	ran = true
	// A fused graph lays out and decodes its batch its own way
	// (fusedengine.go); the step is the same.
	repack, decode := e.repack, e.decode
	if e.pol.io.fused {
		repack, decode = e.repackFused, e.decodeFused
	}
	if len(admitted) > 0 || e.dirty {
		if err := repack(survivors, survivorRows, admitted); err != nil {
			return nil, err
		}
	}
	stepped, err := decode()
	if err != nil {
		return nil, err
	}
	return append(events, stepped...), nil
}

// survivors returns the rows still running and, for each, its row in
// e.cur, in their new order: a survivor keeps its row when that row still
// exists after the departures, and the survivors beyond the new batch size
// fill the holes left below it, lowest first. Moving only those rows keeps
// an in-place re-layout to one row copy per departure.
func (e *Engine) survivors() ([]*Sequence, []int) {
	n := 0
	for _, s := range e.rows {
		if s.state == StateRunning {
			n++
		}
	}
	from := make([]int, 0, n)
	var movers []int
	for i, s := range e.rows {
		if s.state != StateRunning {
			continue
		}
		if i < n {
			from = append(from, i)
		} else {
			movers = append(movers, i)
		}
	}
	// from holds the staying rows in order; interleave the movers into the
	// holes.
	out := make([]int, n)
	next, k := 0, 0
	for i := 0; i < n; i++ {
		if next < len(from) && from[next] == i {
			out[i] = i
			next++
		} else {
			out[i] = movers[k]
			k++
		}
	}
	seqs := make([]*Sequence, n)
	for i, r := range out {
		seqs[i] = e.rows[r]
	}
	return seqs, out
}

// admit pops work from the queue, first in first out, while it fits.
func (e *Engine) admit(running int) []workItem {
	free := e.opts.MaxBatch - running
	n := 0
	var out []workItem
	preRows, preLongest := 0, 0
	for n < len(e.queue) {
		w := e.queue[n]
		need := 1
		if w.grp != nil {
			need = 0
			for _, s := range w.grp.seqs {
				if s.state == StateQueued {
					need++
				}
			}
		} else if w.seq.state != StateQueued {
			need = 0 // finished while queued
		}
		if need > free {
			break
		}
		// The prefill's logits ([rows, longest, vocab] float32) must stay
		// within budget; a single item is always admitted.
		if toks := w.prefillTokens(); toks > 0 {
			rows, longest := preRows+1, max(preLongest, toks)
			if preRows > 0 && rows*longest*4*e.pol.io.vocab > e.prefillBudget() {
				break
			}
			preRows, preLongest = rows, longest
		}
		free -= need
		n++
		if need > 0 {
			out = append(out, w)
		}
	}
	e.queue = e.queue[:copy(e.queue, e.queue[n:])]
	return out
}

// prefillLogitsBytes bounds the logits of one prefill Run (ONNX Runtime
// computes logits at every position, though the engine needs none). A
// prefill bigger than that (one long prompt) runs in chunks of columns,
// each chunk's cache the next one's past, which also bounds ONNX Runtime's
// own activations.
const prefillLogitsBytes = 256 << 20

func (e *Engine) prefillBudget() int {
	if b := e.pol.prefillBudget; b > 0 {
		return b
	}
	return prefillLogitsBytes
}

// prefillTokens is the number of tokens the item's prefill feeds (0: none).
func (w workItem) prefillTokens() int {
	if w.grp != nil {
		return len(w.grp.prompt) - 1
	}
	return len(w.seq.inject)
}

// prefillRow is one row of the prefill batch.
type prefillRow struct {
	past    rowSource // the row's existing cache (resumes), or empty
	pastLen int
	tokens  []int32
}

// repack lays out the decode batch's cache for survivors followed by the
// admitted work, running one batched prefill for the admitted work first.
func (e *Engine) repack(survivors []*Sequence, survivorRows []int, admitted []workItem) error {
	l := &e.pol.io
	var pre []prefillRow
	preIndex := make([]int, len(admitted)) // prefill row of each admitted item, -1 if none
	for i, w := range admitted {
		preIndex[i] = -1
		switch {
		case w.grp != nil && len(w.grp.prompt) > 1:
			preIndex[i] = len(pre)
			pre = append(pre, prefillRow{tokens: w.grp.prompt[:len(w.grp.prompt)-1]})
		case w.seq != nil && len(w.seq.inject) > 0:
			s := w.seq
			toks := make([]int32, 0, len(s.inject))
			toks = append(toks, s.tokens[len(s.tokens)-len(s.inject)-1:len(s.tokens)-1]...)
			preIndex[i] = len(pre)
			pre = append(pre, prefillRow{past: s.cache, pastLen: s.cache.len(), tokens: toks})
		}
	}
	var preP, preN int
	if len(pre) > 0 {
		var err error
		if preP, preN, err = e.prefill(pre); err != nil {
			return err
		}
		for i, w := range admitted {
			if preIndex[i] >= 0 && w.seq != nil {
				w.seq.held = false // the prefill has its cache now
			}
		}
	}
	// Rows still held in the batch buffer are about to be overwritten:
	// copy them out.
	for _, s := range e.held {
		if s.held {
			s.cache = rowSource{blk: extract(l, s.cache), spans: [2]span{{0, s.cache.len()}}}
			s.held = false
		}
	}
	e.held = e.held[:0]

	// Sources of the new batch, in row order.
	var rows []*Sequence
	var srcs []rowSource
	for i, s := range survivors {
		rows = append(rows, s)
		r := survivorRows[i]
		srcs = append(srcs, rowSource{blk: e.cur, row: r, spans: [2]span{{e.pads[r], e.cur.cols}}})
	}
	for i, w := range admitted {
		var src rowSource
		if j := preIndex[i]; j >= 0 {
			r := pre[j]
			src = rowSource{blk: e.prefillPresent, row: j, spans: [2]span{
				{preP - r.pastLen, preP},
				{preP + preN - len(r.tokens), preP + preN},
			}}
		} else if w.seq != nil {
			src = w.seq.cache
		} else {
			src = rowSource{blk: e.cur} // one-token prompt: empty cache
		}
		if w.grp != nil {
			for _, s := range w.grp.seqs {
				if s.state == StateQueued {
					rows = append(rows, s)
					srcs = append(srcs, src)
				}
			}
		} else {
			rows = append(rows, w.seq)
			srcs = append(srcs, src)
		}
	}
	P := 0
	for _, src := range srcs {
		P = max(P, src.len())
	}
	var pads []int
	if e.fitsInPlace(len(rows), P) {
		// Survivors move up over the rows that left, inside e.cur; new rows
		// are written after them, left-padded to the current width.
		P = e.cur.cols
		pads = make([]int, len(rows))
		e.cur.moveRows(l, survivorRows)
		e.cur.rows = len(rows)
		for r, src := range srcs {
			if r < len(survivors) {
				pads[r] = e.pads[survivorRows[r]]
				continue
			}
			pads[r] = P - src.len()
			copyRow(l, e.cur, r, pads[r], src)
		}
		e.stats.InPlaceRepacks++
	} else {
		e.spare.reshape(l, len(rows), P)
		pads = make([]int, len(rows))
		for r, src := range srcs {
			pads[r] = P - src.len()
			copyRow(l, e.spare, r, pads[r], src)
		}
		e.cur, e.spare = e.spare, e.cur
	}
	for _, s := range rows {
		s.state = StateRunning
		s.cache = rowSource{}
		s.inject = nil
	}
	e.rows, e.pads = rows, pads
	e.dirty = false
	e.stats.Repacks++
	return nil
}

// fitsInPlace reports whether the new batch of rows rows, whose longest
// cache is need columns, can be laid out inside e.cur at its current width:
// the buffer has room for the rows, no row is wider than e.cur, and the
// width is not much more than needed (else a full re-layout trims the
// padding every row would otherwise carry).
func (e *Engine) fitsInPlace(rows, need int) bool {
	l := &e.pol.io
	P := e.cur.cols
	if e.cur.keys == nil || need > P || need < P-P/8 {
		return false
	}
	return rows*l.kvHeads*P*l.headDim*l.kvElem <= cap(e.cur.keys[0])
}

// prefill runs the rows' new tokens on top of their caches in one batched
// Run. The past region is left-padded to preP columns and the new tokens to
// preN; the present cache lands in e.prefillPresent.
func (e *Engine) prefill(rows []prefillRow) (preP, preN int, err error) {
	l := &e.pol.io
	for _, r := range rows {
		preP = max(preP, r.pastLen)
		preN = max(preN, len(r.tokens))
	}
	B := len(rows)
	past := e.prefillPast
	if r := rows[0]; B == 1 && r.pastLen > 0 && r.past.spans[1].len() == 0 && r.past.spans[0].to == r.past.blk.cols {
		// One resumed sequence (the common case): its row, left-padded, is
		// already laid out as a one-row past; point at it.
		past = r.past.blk.rowView(l, r.past.row)
		preP = past.cols
	} else {
		past.reshape(l, B, preP)
		for i, r := range rows {
			if r.pastLen > 0 {
				copyRow(l, past, i, preP-r.pastLen, r.past)
			} else if preP > 0 {
				copyRow(l, past, i, preP, rowSource{blk: past})
			}
		}
	}
	if preN == 0 {
		return 0, 0, fmt.Errorf("prefill: no tokens to prefill")
	}
	// The whole prefill's inputs: ids and positions [B, preN] (rows
	// left-padded to preN), and the attention mask [B, preP+preN].
	T := preP + preN
	e.preIDs = grow(e.preIDs, B*preN)
	e.prePos = grow(e.prePos, B*preN)
	e.preMask = grow(e.preMask, B*T)
	ids, pos, mask := e.preIDs, e.prePos, e.preMask
	for i, r := range rows {
		padN := preN - len(r.tokens)
		for j := 0; j < preN; j++ {
			if j < padN {
				ids[i*preN+j], pos[i*preN+j] = 0, 0
			} else {
				ids[i*preN+j] = int64(r.tokens[j-padN])
				pos[i*preN+j] = int64(r.pastLen + j - padN)
			}
		}
		m := mask[i*T : (i+1)*T]
		for c := range m {
			real := (c >= preP-r.pastLen && c < preP) || c >= preP+padN
			if real {
				m[c] = 1
			} else {
				m[c] = 0
			}
		}
		e.stats.PrefillTokens += int64(len(r.tokens))
	}
	// Columns per Run, within the logits budget. Each chunk's present cache
	// is the next chunk's past; the two prefill blocks take turns, and the
	// last present ends up in e.prefillPresent.
	chunk := min(preN, max(1, e.prefillBudget()/(4*l.vocab*B)))
	rb := &e.prefillBuf
	cur := past
	for from := 0; from < preN; from += chunk {
		to := min(from+chunk, preN)
		S, P := to-from, preP+from
		cids, cmask, cpos := rb.prepare(B, S, P)
		for i := 0; i < B; i++ {
			copy(cids[i*S:(i+1)*S], ids[i*preN+from:i*preN+to])
			copy(cpos[i*S:(i+1)*S], pos[i*preN+from:i*preN+to])
			copy(cmask[i*(P+S):(i+1)*(P+S)], mask[i*T:i*T+P+S])
		}
		out := e.prefillPresent
		if cur == out {
			out = e.prefillPast
		}
		out.reshape(l, B, P+S)
		rb.past, rb.present = cur, out
		took, err := e.pol.run(rb)
		e.stats.RunTime += took
		e.stats.PrefillRuns++
		if err != nil {
			return 0, 0, fmt.Errorf("prefill: %w", err)
		}
		cur = out
	}
	if cur != e.prefillPresent {
		e.prefillPresent, e.prefillPast = cur, e.prefillPresent
	}
	return preP, preN, nil
}

// decode feeds every row's pending token, samples the next one, and
// reports the rows that paused or finished.
func (e *Engine) decode() ([]Event, error) {
	l := &e.pol.io
	B, P := len(e.rows), e.cur.cols
	rb := &e.decodeBuf
	ids, mask, pos := rb.prepare(B, 1, P)
	T := P + 1
	for r, s := range e.rows {
		ids[r] = int64(s.tokens[len(s.tokens)-1])
		pos[r] = int64(P - e.pads[r])
		m := mask[r*T : (r+1)*T]
		pad := e.pads[r]
		clear(m[:pad])
		for c := pad; c < T; c++ {
			m[c] = 1
		}
	}
	e.spare.reshape(l, B, T)
	rb.past, rb.present = e.cur, e.spare
	took, err := e.pol.run(rb)
	e.stats.RunTime += took
	e.stats.DecodeRuns++
	e.stats.RowSteps += int64(B)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	e.cur, e.spare = e.spare, e.cur

	e.sampleRows(rb.logits)
	var events []Event
	for r, s := range e.rows {
		kind := e.advance(s, e.draws[r])
		if kind == 0 {
			continue
		}
		e.dirty = true
		if kind == EventToolCall {
			// Held in place: the next re-layout prefills from the row or
			// copies it out.
			s.cache = rowSource{blk: e.cur, row: r, spans: [2]span{{e.pads[r], T}}}
			s.held = true
			e.held = append(e.held, s)
		}
		events = append(events, Event{Kind: kind, Seq: s})
	}
	return events, nil
}

// draw is a sampled token and its logprob.
type draw struct {
	id      int32
	logprob float32
}

// minLogitsPerWorker: below this many logits per goroutine, sampling stays
// on the calling goroutine (waking another costs more than it saves).
const minLogitsPerWorker = 1 << 18

// sampleRows draws every row's next token from the step's logits. Rows are
// independent (each has its own RNG and logits), so they are spread over up
// to GOMAXPROCS goroutines; the result does not depend on how.
func (e *Engine) sampleRows(logits []float32) {
	B, V := len(e.rows), e.pol.io.vocab
	e.draws = grow(e.draws, B)
	workers := max(1, min(runtime.GOMAXPROCS(0), B, B*V/minLogitsPerWorker))
	for len(e.samplers) < workers {
		e.samplers = append(e.samplers, sampler{})
	}
	work := func(w int) {
		sm := &e.samplers[w]
		for r := w; r < B; r += workers {
			s := e.rows[r]
			u := s.rng.uniform() // drawn for forced tokens too: the stream stays aligned
			if s.sampled < len(s.forced) {
				id := s.forced[s.sampled]
				e.draws[r] = draw{id, sm.logprobOf(logits[r*V:(r+1)*V], &s.group.sampling, id)}
				continue
			}
			id, lp := sm.sample(logits[r*V:(r+1)*V], &s.group.sampling, u)
			e.draws[r] = draw{id, lp}
		}
	}
	if workers == 1 {
		work(0)
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() { work(w) })
	}
	wg.Wait()
}

// advance samples a row's next token and records it; it returns the event
// the token caused, or 0.
func (e *Engine) advance(s *Sequence, d draw) EventKind {
	g := s.group
	id, lp := d.id, d.logprob
	e.stats.SampledTokens++
	if !s.open {
		start := len(s.tokens) - s.promptLen
		s.segments = append(s.segments, traj.Segment{Kind: traj.SegmentModel, Turn: s.Turn(), Start: start, End: start})
		s.open = true
	}
	s.tokens = append(s.tokens, id)
	s.mask = append(s.mask, 1)
	s.logprobs = append(s.logprobs, lp)
	s.segments[len(s.segments)-1].End++
	s.sampled++
	s.turnTaken++

	var delta string
	if id <= e.maxTokID { // models may have more logits than the tokenizer has tokens
		var err error
		if delta, err = s.decoder.Add(id); err != nil {
			delta = ""
		}
	}
	s.text.WriteString(delta)
	for _, eos := range g.eos {
		if id == eos {
			s.closeModelSegment()
			// A turn that made calls ends in its own end-of-turn token
			// (sampled, kept): the sequence waits for the tool turn.
			if te, ok := s.detector.(TurnEnder); ok && te.EndTurn() {
				s.state = StatePaused
				return EventToolCall
			}
			s.release(traj.FinishStop)
			return EventFinished
		}
	}
	if g.maxStop > 0 && delta != "" && s.stopMatched(delta) {
		s.closeModelSegment()
		s.release(traj.FinishStop)
		return EventFinished
	}
	if s.detector != nil && s.detector.Feed(delta) {
		s.state = StatePaused
		return EventToolCall
	}
	if e.capped(s) {
		s.closeModelSegment()
		s.release(traj.FinishLength)
		return EventFinished
	}
	return 0
}

// capped reports whether s may sample no further token: a length cap of its
// sampling settings or the model's context is reached.
func (e *Engine) capped(s *Sequence) bool {
	c := &s.group.sampling
	return (c.MaxSampledTokens > 0 && s.sampled >= c.MaxSampledTokens) ||
		(c.MaxNewTokens > 0 && s.turnTaken >= c.MaxNewTokens) ||
		(c.MaxResponseTokens > 0 && len(s.tokens)-s.promptLen >= c.MaxResponseTokens) ||
		len(s.tokens) >= e.maxLen
}

// stopMatched reports whether a stop string ends inside delta, keeping the
// last maxStop-1 bytes of text for matches that straddle tokens.
func (s *Sequence) stopMatched(delta string) bool {
	g := s.group
	s.tail = append(s.tail, delta...)
	window := string(s.tail)
	hit := false
	for _, stop := range g.sampling.StopStrings {
		if strings.Contains(window, stop) {
			hit = true
			break
		}
	}
	if keep := g.maxStop - 1; len(s.tail) > keep {
		s.tail = s.tail[:copy(s.tail, s.tail[len(s.tail)-keep:])]
	}
	return hit
}

// turn is the model turn the next segment belongs to: the number of tool
// segments so far.
// Turn is the index of the sequence's current model turn: the number of
// tool spans injected so far.
func (s *Sequence) Turn() int {
	n := 0
	for _, seg := range s.segments {
		if seg.Kind == traj.SegmentTool {
			n++
		}
	}
	return n
}

// closeModelSegment fixes the open model segment's text, flushing any
// unfinished character.
func (s *Sequence) closeModelSegment() {
	if !s.open {
		return
	}
	s.text.WriteString(s.decoder.Flush())
	s.segments[len(s.segments)-1].Text = s.text.String()
	s.text.Reset()
	s.open = false
}

// release finishes the sequence and drops its cache.
func (s *Sequence) release(reason traj.FinishReason) {
	s.state = StateFinished
	s.finish = reason
	s.cache = rowSource{}
	s.held = false
	s.inject = nil
}
