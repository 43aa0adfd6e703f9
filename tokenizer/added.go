package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// AddedToken is an entry of tokenizer.json's added_tokens: a token matched in
// the input before pre-tokenization, special (control tokens such as
// <|im_end|>, skipped by Decode with skipSpecial) or not.
type AddedToken struct {
	// ID is the token's id; Content is its text as written in tokenizer.json.
	ID      int32
	Content string
	// Special tokens are skipped when decoding with skipSpecial.
	Special bool
	// LStrip and RStrip make the match swallow the whitespace on its left or
	// right; SingleWord matches only where the token is not inside a word;
	// Normalized tokens are matched in the normalized text, the others in the
	// raw input.
	LStrip, RStrip, SingleWord, Normalized bool
}

// addedMatcher finds added tokens leftmost-longest (the Aho-Corasick
// LeftmostLongest search HF uses) with a byte trie: at each position it walks
// the trie as far as the text allows and keeps the longest token seen.
type addedMatcher struct {
	root  [256]int32 // child of the root per byte; 0: none
	nodes []trieNode // nodes[0] is the root
	n     int        // number of tokens
}

type trieNode struct {
	edges []trieEdge  // sorted by byte
	tok   *AddedToken // a token ends here
}

type trieEdge struct {
	b     byte
	child int32
}

func newAddedMatcher(toks []*AddedToken, pattern func(*AddedToken) string) *addedMatcher {
	m := &addedMatcher{nodes: []trieNode{{}}}
	for _, t := range toks {
		p := pattern(t)
		if p == "" {
			continue
		}
		m.n++
		node := int32(0)
		for i := 0; i < len(p); i++ {
			node = m.child(node, p[i], true)
		}
		if m.nodes[node].tok == nil { // the first of identical contents wins
			m.nodes[node].tok = t
		}
	}
	return m
}

// child returns node's child for b, creating it when create is set (0: none).
func (m *addedMatcher) child(node int32, b byte, create bool) int32 {
	if node == 0 {
		if c := m.root[b]; c != 0 || !create {
			return c
		}
		m.nodes = append(m.nodes, trieNode{})
		m.root[b] = int32(len(m.nodes) - 1)
		return m.root[b]
	}
	edges := m.nodes[node].edges
	k := sort.Search(len(edges), func(i int) bool { return edges[i].b >= b })
	if k < len(edges) && edges[k].b == b {
		return edges[k].child
	}
	if !create {
		return 0
	}
	m.nodes = append(m.nodes, trieNode{})
	c := int32(len(m.nodes) - 1)
	edges = append(edges, trieEdge{})
	copy(edges[k+1:], edges[k:])
	edges[k] = trieEdge{b, c}
	m.nodes[node].edges = edges
	return c
}

func (m *addedMatcher) empty() bool { return m.n == 0 }

// next returns the leftmost-longest match at or after from, or ok=false.
func (m *addedMatcher) next(s string, from int) (start, end int, tok *AddedToken, ok bool) {
	for i := from; i < len(s); i++ {
		node := m.root[s[i]]
		if node == 0 {
			continue
		}
		for j := i + 1; ; j++ {
			if t := m.nodes[node].tok; t != nil {
				tok, end = t, j
			}
			if j == len(s) {
				break
			}
			if node = m.child(node, s[j], false); node == 0 {
				break
			}
		}
		if tok != nil {
			return i, end, tok, true
		}
	}
	return 0, 0, nil, false
}

// isWordRune is Rust regex's Unicode \w: alphabetic, marks, decimal digits,
// connector punctuation and join controls.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.Is(unicode.Other_Alphabetic, r) || unicode.Is(unicode.M, r) ||
		unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Pc, r) || r == '\u200c' || r == '\u200d'
}

// splitAdded splits p around the added tokens m finds (HF's
// AddedVocabulary::find_matches + split_with_indices), appending to out.
func splitAdded(p piece, m *addedMatcher, out []piece) []piece {
	s := p.text
	if m.empty() || s == "" {
		return append(out, p)
	}
	startOffset := 0
	emit := func(a, b int, id int32) {
		if a < b || id >= 0 {
			out = append(out, piece{text: s[a:b], id: id, first: p.first && a == 0})
		}
	}
	for from := 0; from < len(s); {
		start, stop, tok, ok := m.next(s, from)
		if !ok {
			break
		}
		from = stop
		if tok.SingleWord {
			startSpace := start == 0
			if !startSpace {
				r, _ := utf8.DecodeLastRuneInString(s[:start])
				startSpace = !isWordRune(r)
			}
			stopSpace := stop == len(s)
			if !stopSpace {
				r, _ := utf8.DecodeRuneInString(s[stop:])
				stopSpace = !isWordRune(r)
			}
			if !startSpace || !stopSpace {
				continue
			}
		}
		if tok.LStrip {
			newStart := len(strings.TrimRightFunc(s[:start], unicode.IsSpace))
			start = max(newStart, startOffset)
		}
		if tok.RStrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
		}
		if startOffset < start {
			emit(startOffset, start, -1)
		}
		emit(start, stop, tok.ID)
		startOffset = stop
	}
	if startOffset < len(s) {
		emit(startOffset, len(s), -1)
	}
	return out
}
