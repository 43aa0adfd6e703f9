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
// LeftmostLongest search HF uses), bucketed by first byte.
type addedMatcher struct {
	byFirst [256][]int // indexes into patterns, longest first
	pats    []string
	toks    []*AddedToken
}

func newAddedMatcher(toks []*AddedToken, pattern func(*AddedToken) string) *addedMatcher {
	m := &addedMatcher{}
	for _, t := range toks {
		p := pattern(t)
		if p == "" {
			continue
		}
		m.pats = append(m.pats, p)
		m.toks = append(m.toks, t)
		m.byFirst[p[0]] = append(m.byFirst[p[0]], len(m.pats)-1)
	}
	for b := range m.byFirst {
		idx := m.byFirst[b]
		sort.SliceStable(idx, func(i, j int) bool { return len(m.pats[idx[i]]) > len(m.pats[idx[j]]) })
	}
	return m
}

func (m *addedMatcher) empty() bool { return len(m.pats) == 0 }

// next returns the leftmost-longest match at or after from, or ok=false.
func (m *addedMatcher) next(s string, from int) (start, end int, tok *AddedToken, ok bool) {
	for i := from; i < len(s); i++ {
		for _, k := range m.byFirst[s[i]] {
			if strings.HasPrefix(s[i:], m.pats[k]) {
				return i, i + len(m.pats[k]), m.toks[k], true
			}
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
