package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// merge is the result of merging one pair of ids.
type merge struct {
	rank  int32 // position in the merges list: lower merges first
	newID int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// bpeModel is HF's BPE model (models/bpe/model.rs) without dropout.
type bpeModel struct {
	vocab        map[string]int32
	merges       map[uint64]merge
	unk          int32 // -1: no unk token
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix
	fallbackIDs  [256]int32

	// Byte-level fast path: the id of each byte's byte-level rune, and the
	// vocabulary keyed by raw bytes. Valid when fastBytes is true.
	fastBytes bool
	byteIDs   [256]int32
	rawVocab  map[string]int32
	tables    *byteLevelTables

	cache *wordCache
}

func buildBPE(raw json.RawMessage, bl *byteLevelTables) (*bpeModel, map[string]int32, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, nil, fmt.Errorf("tokenizer.json model: %w", err)
	}
	if head.Type != "BPE" && head.Type != "" {
		return nil, nil, fmt.Errorf("tokenizer.json model: unsupported model %q", head.Type)
	}
	var mj modelJSON
	if err := json.Unmarshal(raw, &mj); err != nil {
		return nil, nil, fmt.Errorf("tokenizer.json model: %w", err)
	}
	if mj.Merges == nil {
		return nil, nil, fmt.Errorf("tokenizer.json model: no merges (only BPE models are supported)")
	}
	if mj.Dropout != nil && *mj.Dropout > 0 {
		return nil, nil, fmt.Errorf("tokenizer.json model: BPE dropout %v is not supported (non-deterministic)", *mj.Dropout)
	}
	m := &bpeModel{
		vocab:        mj.Vocab,
		unk:          -1,
		fuseUnk:      mj.FuseUnk,
		byteFallback: mj.ByteFallback,
		ignoreMerges: mj.IgnoreMerges,
		tables:       bl,
		cache:        newWordCache(),
	}
	if mj.ContinuingSubwordPrefix != nil {
		m.prefix = *mj.ContinuingSubwordPrefix
	}
	if mj.EndOfWordSuffix != nil {
		m.suffix = *mj.EndOfWordSuffix
	}
	if mj.UnkToken != nil {
		id, ok := m.vocab[*mj.UnkToken]
		if !ok {
			return nil, nil, fmt.Errorf("tokenizer.json model.unk_token %q is not in the vocabulary", *mj.UnkToken)
		}
		m.unk = id
	}
	for b := 0; b < 256; b++ {
		m.fallbackIDs[b] = -1
		if id, ok := m.vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.fallbackIDs[b] = id
		}
	}
	if err := m.parseMerges(mj.Merges); err != nil {
		return nil, nil, err
	}
	m.fastBytes = m.prefix == "" && m.suffix == ""
	for b := 0; b < 256 && m.fastBytes; b++ {
		id, ok := m.vocab[bl.byteToString[b]]
		m.byteIDs[b] = id
		m.fastBytes = ok
	}
	if m.fastBytes {
		m.rawVocab = make(map[string]int32, len(m.vocab))
		for tok, id := range m.vocab {
			if raw, ok := bl.decodeToken(tok); ok {
				m.rawVocab[string(raw)] = id
			}
		}
	}
	return m, m.vocab, nil
}

func (m *bpeModel) parseMerges(raw json.RawMessage) error {
	// Merges are either "a b" strings or [a, b] pairs; one Unmarshal call for
	// the whole list (per-item decoding dominates load time otherwise).
	var pairs [][2]string
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		trimmed = bytes.TrimLeft(trimmed[1:], " \t\r\n")
	}
	if len(trimmed) > 0 && trimmed[0] == '"' {
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("tokenizer.json model.merges: %w", err)
		}
		pairs = make([][2]string, len(list))
		for i, s := range list {
			a, b, ok := strings.Cut(s, " ")
			if !ok || strings.Contains(b, " ") {
				return fmt.Errorf("tokenizer.json model.merges[%d]: %q is not two tokens", i, s)
			}
			pairs[i] = [2]string{a, b}
		}
	} else if err := json.Unmarshal(raw, &pairs); err != nil {
		return fmt.Errorf("tokenizer.json model.merges: want [\"a b\", ...] or [[a, b], ...]: %w", err)
	}
	m.merges = make(map[uint64]merge, len(pairs))
	for i, p := range pairs {
		a, b := p[0], p[1]
		aID, ok := m.vocab[a]
		if !ok {
			return fmt.Errorf("tokenizer.json model.merges[%d]: token %q is not in the vocabulary", i, a)
		}
		bID, ok := m.vocab[b]
		if !ok {
			return fmt.Errorf("tokenizer.json model.merges[%d]: token %q is not in the vocabulary", i, b)
		}
		bRest := b
		if m.prefix != "" && strings.HasPrefix(b, m.prefix) {
			bRest = b[len(m.prefix):]
		}
		newID, ok := m.vocab[a+bRest]
		if !ok {
			return fmt.Errorf("tokenizer.json model.merges[%d]: merged token %q is not in the vocabulary", i, a+bRest)
		}
		m.merges[pairKey(aID, bID)] = merge{rank: int32(i), newID: newID}
	}
	return nil
}

// tokenize appends the ids of one piece to dst.
func (m *bpeModel) tokenize(p piece, dst []int32, scratch *bpeScratch) ([]int32, error) {
	if p.text == "" {
		return dst, nil
	}
	if ids, ok := m.cache.get(p.text); ok {
		return append(dst, ids...), nil
	}
	n := len(dst)
	dst, err := m.tokenizeWord(p, dst, scratch)
	if err == nil {
		m.cache.put(p.text, dst[n:])
	}
	return dst, err
}

// tokenizeWord runs the model on one piece, without the cache.
func (m *bpeModel) tokenizeWord(p piece, dst []int32, scratch *bpeScratch) ([]int32, error) {
	if p.byteLevel {
		if m.fastBytes {
			if m.ignoreMerges {
				if id, ok := m.rawVocab[p.text]; ok {
					return append(dst, id), nil
				}
			}
			syms := scratch.ids[:0]
			for i := 0; i < len(p.text); i++ {
				syms = append(syms, m.byteIDs[p.text[i]])
			}
			syms = m.mergeAll(syms, scratch)
			scratch.ids = syms
			return append(dst, syms...), nil
		}
		p.text = m.tables.encode(p.text)
		p.byteLevel = false
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[p.text]; ok {
			return append(dst, id), nil
		}
	}
	syms := scratch.ids[:0]
	unk, unkPending := int32(-1), false
	text := p.text
	for i := 0; i < len(text); {
		_, w := utf8.DecodeRuneInString(text[i:])
		s := text[i : i+w]
		if i > 0 && m.prefix != "" {
			s = m.prefix + s
		}
		if i+w == len(text) && m.suffix != "" {
			s += m.suffix
		}
		i += w
		if id, ok := m.vocab[s]; ok {
			if unkPending {
				syms = append(syms, unk)
				unkPending = false
			}
			syms = append(syms, id)
			continue
		}
		if m.byteFallback {
			all := true
			for k := 0; k < len(s); k++ {
				if m.fallbackIDs[s[k]] < 0 {
					all = false
					break
				}
			}
			if all {
				for k := 0; k < len(s); k++ {
					syms = append(syms, m.fallbackIDs[s[k]])
				}
				continue
			}
		}
		if m.unk >= 0 {
			if unkPending && !m.fuseUnk {
				syms = append(syms, unk)
			}
			unk, unkPending = m.unk, true
		}
	}
	if unkPending {
		syms = append(syms, unk)
	}
	syms = m.mergeAll(syms, scratch)
	scratch.ids = syms
	return append(dst, syms...), nil
}

// bpeScratch holds the buffers of one Encode call (pooled per Tokenizer).
type bpeScratch struct {
	ids  []int32
	next []int32
	prev []int32
	heap []heapItem

	// Two piece buffers that pipeline stages alternate between, and the
	// span buffer of the current split.
	pieces [2][]piece
	cur    int
	spans  []span
}

// nextPieces returns an empty piece buffer other than the current one.
func (sc *bpeScratch) nextPieces() []piece {
	sc.cur ^= 1
	return sc.pieces[sc.cur][:0]
}

// keepPieces records the (possibly grown) current buffer.
func (sc *bpeScratch) keepPieces(p []piece) []piece {
	sc.pieces[sc.cur] = p
	return p
}

// mergeAll applies merges lowest rank first, leftmost first among equal
// ranks: the order of HF's Word::merge_all.
func (m *bpeModel) mergeAll(ids []int32, scratch *bpeScratch) []int32 {
	if len(ids) < 2 {
		return ids
	}
	if len(ids) > 48 {
		return m.mergeHeap(ids, scratch)
	}
	for {
		best, bestRank := -1, int32(1<<31-1)
		var bestID int32
		for i := 0; i+1 < len(ids); i++ {
			if mg, ok := m.merges[pairKey(ids[i], ids[i+1])]; ok && mg.rank < bestRank {
				best, bestRank, bestID = i, mg.rank, mg.newID
			}
		}
		if best < 0 {
			return ids
		}
		ids[best] = bestID
		ids = append(ids[:best+1], ids[best+2:]...)
	}
}

type heapItem struct {
	rank, pos, newID int32
}

func heapLess(a, b heapItem) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.pos < b.pos
}

func heapPush(h []heapItem, it heapItem) []heapItem {
	h = append(h, it)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !heapLess(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func heapPop(h []heapItem) (heapItem, []heapItem) {
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, r, s := 2*i+1, 2*i+2, i
		if l < n && heapLess(h[l], h[s]) {
			s = l
		}
		if r < n && heapLess(h[r], h[s]) {
			s = r
		}
		if s == i {
			break
		}
		h[i], h[s] = h[s], h[i]
		i = s
	}
	return top, h
}

// mergeHeap is the priority-queue form of mergeAll for long words (the
// whole input is one word for SentencePiece-style tokenizers without a
// pre-tokenizer).
func (m *bpeModel) mergeHeap(ids []int32, scratch *bpeScratch) []int32 {
	n := len(ids)
	next := append(scratch.next[:0], make([]int32, n)...)
	prev := append(scratch.prev[:0], make([]int32, n)...)
	alive := make([]bool, n)
	for i := range ids {
		next[i], prev[i], alive[i] = int32(i+1), int32(i-1), true
	}
	next[n-1] = -1
	h := scratch.heap[:0]
	for i := 0; i+1 < n; i++ {
		if mg, ok := m.merges[pairKey(ids[i], ids[i+1])]; ok {
			h = heapPush(h, heapItem{mg.rank, int32(i), mg.newID})
		}
	}
	for len(h) > 0 {
		var top heapItem
		top, h = heapPop(h)
		pos := top.pos
		if !alive[pos] || next[pos] < 0 {
			continue
		}
		right := next[pos]
		mg, ok := m.merges[pairKey(ids[pos], ids[right])]
		if !ok || mg.newID != top.newID {
			continue
		}
		ids[pos] = top.newID
		alive[right] = false
		next[pos] = next[right]
		if next[pos] >= 0 {
			prev[next[pos]] = pos
		}
		if p := prev[pos]; p >= 0 {
			if mg, ok := m.merges[pairKey(ids[p], ids[pos])]; ok {
				h = heapPush(h, heapItem{mg.rank, p, mg.newID})
			}
		}
		if nx := next[pos]; nx >= 0 {
			if mg, ok := m.merges[pairKey(ids[pos], ids[nx])]; ok {
				h = heapPush(h, heapItem{mg.rank, pos, mg.newID})
			}
		}
	}
	scratch.next, scratch.prev, scratch.heap = next, prev, h
	out := ids[:0]
	for i := 0; i < n; i++ {
		if alive[i] {
			out = append(out, ids[i])
		}
	}
	return out
}
